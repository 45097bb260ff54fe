// Package kube is the plugin's typed Kubernetes client: the dozen API groups it uses, each kind's client
// on a REST client over a scheme of those groups alone, and discovery by aggregated discovery.
//
// Why not client-go's clientset: every generated typed client of client-go, and its discovery client,
// imports k8s.io/client-go/kubernetes/scheme, whose package initializer registers every type of every
// Kubernetes API group. It ran in every process, `--help` included, and was its largest single cost
// (1.3 ms of about 7.5). Here the scheme is built when the first client is, for the groups below only.
//
// The interfaces are the generated clients' method sets, narrowed to what the plugin calls, so that
// client-go's fake clientset serves the unit tier unchanged (package kubetest adapts it).
//
// One job per file:
//
//	client.go     the Interface, one interface per API group, and the resource interfaces
//	groups.go     the groups' implementations: a REST client per group version, shared HTTP client and rate limiter
//	resource.go   one kind's typed client (the requests client-go's generated clients send)
//	scheme.go     the scheme of the used groups and its parameter codec, built on first use
//	discovery.go  server version, a group version's resources, and the preferred resources (aggregated
//	              discovery, with the per-group-version requests as the fallback)
package kube
