// Package member is one member cluster of a federation as kubectl federate sees it: its clients, its
// identity (cluster ID and handshake key), and the plumbing every domain shares to talk to it. It knows no
// protocol: the handshake, grants and lifecycle packages build on it. Plumbing with no cluster in it
// (parallel requests, object conversions) is under pkg/internal. Nothing here prints: progress goes
// through a Reporter.
//
// One job per file:
//
//	cluster.go    a Cluster (one side's clients, its per-process caches) and its identity: ID and handshake key
//	kube.go       client plumbing: watches, server-side apply, namespaces ensured once
//	prefetch.go   the reads a run sends at once, before they are needed, to save round trips
//	lock.go       one run per pair at a time (a Lease)
//	names.go      names and labels of what kubectl federate creates, and their validation
//	errors.go     errors callers test for and translate
//	reporter.go   the progress seam
package member
