// Package clusterprofile proves, on real clusters, that the credential this tool exports is reached the
// way ClusterProfile consumers reach a cluster: through sigs.k8s.io/cluster-inventory-api's pkg/access
// (the library Argo CD's ClusterProfile integration, multicluster-runtime and MultiKueue use), with this
// tool's credential plugin and with the reference kubeconfig-secretreader plugin built from its Go
// module. It is a module of its own so that the product's go.mod never requires that library.
package clusterprofile
