// Package clusterprofile proves, on real clusters, that a ClusterProfile written by `kubectl federate
// export clusterprofile` is reached the way ClusterProfile consumers reach a cluster: read with the cluster
// inventory's own typed client and turned into a rest.Config by sigs.k8s.io/cluster-inventory-api's
// pkg/access (the library Argo CD's ClusterProfile integration, multicluster-runtime and MultiKueue use),
// with this tool's credential plugin and with the reference kubeconfig-secretreader plugin built from its
// Go module; the CRD is the one that module ships. It is a module of its own so that the product's go.mod
// never requires that library.
package clusterprofile
