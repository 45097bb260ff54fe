// Package verify is the provider's proof, now, that every tenant's sandbox holds: the escape corpus sent
// as each tenant identity (impersonated, every write a server-side dry run), the rights each identity
// holds beyond what the sandbox binds, the sandbox's own objects compared with what init and issuance
// install (and restored on request, through their own code), each exchange grant's reach compared with
// what was consented, and whether the cluster enforces NetworkPolicy at all. It builds on every room
// below the lifecycle and writes nothing unless asked to repair.
//
// One job per file:
//
//	corpus.go     the escape corpus: an attack, its guards, how it is judged; shared with the e2e attack tests
//	corpus_pods.go  the pod attacks: Pod Security, placement, tokens, volumes, priority
//	corpus_access.go  storage, Services, the sandbox's own objects, rights the sandbox never grants, the quota
//	verify.go     the run: read once, plan from the records, every check at once; the cluster's own rows
//	read.go       everything compared, read at once, one list per kind for the whole cluster
//	subjects.go   what is verified, from the provider's records: tenants, identities, sandbox namespaces
//	drift.go      a sandbox namespace's own objects beside what issuance makes of its records
//	rights.go     the bindings that give an identity more than its sandbox, and what grants an access
//	escapes.go    the corpus sent as each identity (impersonated, dry runs), what got through and why
//	exchange.go   each exchange grant's reach now, beside what was accepted at the consent
//	repair.go     restore what init and issuance own, through their code; never bind or widen
//	report.go     rows, findings, states, and whether everything holds
package verify
