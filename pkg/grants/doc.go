// Package grants is what a provider grants a paired consumer beyond its tenant namespace: resource slices
// (a request signed with the pinned handshake key, a decision recorded where only the provider writes, a
// credential of their own in a sandbox of their own) and extra namespaces bound to the pairing's identity.
// Every grant is carved out of the consumer's quota total and is revoked so that it never comes back.
//
// One job per file:
//
//	slice.go      resource slices: resources, classes, the grant and the slice's sandbox
//	slice_consumer.go  a slice's request, submission, import and local removal
//	slice_provider.go  a slice's verification, acceptance, denial, listing and removal
//	slice_answers.go   a consumer's slices beside what each provider answered (denied, accepted, removed)
//	namespaces.go extra namespaces: grant, revoke, request, list, rebind at renewal; a grant's namespace removed
package grants
