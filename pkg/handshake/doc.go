// Package handshake is the pairing protocol: the provider's and the consumer's steps, each written once,
// as functions over one cluster's clients (a member.Cluster): nonces, the consumer's request, its
// verification, the issuance (a credential through package credential, into a sandbox package sandbox
// builds and proves) and its import, and what every later room shares of a pairing: its stored
// kubeconfig, its recorded settings, the revocation record, exports, audit Events and NotFound. The
// manual commands call one step each; package lifecycle runs them all in one process. Nothing here
// prints: progress goes through a Reporter. Errors name what is wrong in domain terms (a field, a
// cluster, an object), never a command's flag.
//
// One job per file:
//
//	nonces.go     the provider's nonces (create, get, prune expired)
//	tenant.go     the consumer's request: client key, CSR, signed Tenant
//	decode.go     strict decoding of tenant.yaml and identity.yaml
//	verify.go     shape checks of a Tenant and an Identity
//	issue.go      the provider's issuance: verify, request, consume, sandbox, approve, bind, record
//	ahead.go      a one-shot run's certificate request made with its first reads, adopted or deleted
//	issue_federated.go  what a federated issuance does differently: its user and audience, kept on a re-run
//	import.go     the consumer's import: verify the identity, store the kubeconfig and Identity
//	federated.go  the consumer's federated request (its issuer, the preflight) and the kubeconfig minted for it
//	authenticator.go  the provider's authenticator entry of a federated pairing, and why its API server refuses
//	pairing.go    the consumer's way to the provider: its stored kubeconfig
//	credential.go  the credential a plugin hands out: stored in federate-system, or in an export's Secret
//	export.go     a held credential written in another tool's format, rewritten at renewal, deleted with it
//	exportrecord.go  the record in federate-system of each export's objects, by UID: labels prove nothing
//	exportdelete.go  one export removed by its record: its Target or ClusterProfile, its Secret, the record
//	settings.go   what a pairing was given, kept across renewals and re-grants
//	retire.go     the end of a renewal's overlap: the renewed-away user taken out of its bindings
//	revoked.go    the revocation record: nothing revoked regains rights, not even through a grant made meanwhile
//	audit.go      the audit Events of every issuance, import, revocation, grant, cordon and drain
//	notfound.go   a name with no record is NotFound; one already removed is "already"
package handshake
