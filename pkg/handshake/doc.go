// Package handshake is the protocol: the provider's and the consumer's steps, each written once, as
// functions over one cluster's clients (a member.Cluster); credentials are issued and checked through
// package credential, into sandboxes that package sandbox builds and proves. The manual commands call one step each; authenticate calls them
// all in one process. Nothing here prints: progress goes through a Reporter. Errors name what is wrong in
// domain terms (a field, a cluster, an object), never a command's flag.
//
// One job per file:
//
//	nonces.go     the provider's nonces (create, get, prune expired)
//	tenant.go     the consumer's request: client key, CSR, signed Tenant
//	decode.go     strict decoding of tenant.yaml and identity.yaml
//	verify.go     shape checks of a Tenant and an Identity
//	issue.go      the provider's issuance: verify, request, consume, sandbox, approve, bind, record
//	import.go     the consumer's import: verify the identity, store the kubeconfig and Identity
//	authenticate.go  the four steps in one process
//	slice.go      resource slices: resources, classes, the grant and the slice's sandbox
//	slice_consumer.go  a slice's request, submission, import and local removal
//	slice_provider.go  a slice's verification, acceptance, denial, listing and removal
//	namespaces.go extra namespaces: grant, revoke, request, list, rebind at renewal
//	pairing.go    the consumer's way to the provider: its stored kubeconfig
//	export.go     a held credential written in another tool's format, rewritten at renewal, deleted with it
//	exportrecord.go  the record in federate-system of each export's objects, by UID: labels prove nothing
//	revoke.go     take a tenant's rights away, in every namespace it was granted, and stop what it runs
//	remove.go     unauthenticate: both sides' removal
//	info.go       what this cluster provides and holds
//	settings.go   what a pairing was given, kept across renewals and re-grants
//	renew.go      renew: a new credential with the pairing's recorded settings
//	revoked.go    the revocation record: nothing revoked regains rights
//	cordon.go     cordon, uncordon and drain of a consumer on a provider
//	exchange.go   identity exchange, the consumer's side: rules, resolution, requests
//	exchange_provider.go  identity exchange, the provider's side: list, allow, deny exactly what was shown
//	reach.go      what an exchange target can reach, shown before the provider consents
//	mesh.go       mesh and unmesh: every directed pair of a set of clusters
//	status.go     status: credentials, expiry, checks that prove rights, leftovers
//	audit.go      the audit Events of every issuance, import, revocation, grant, cordon and drain
//	notfound.go   a name with no record is NotFound; one already removed is "already"
package handshake
