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
package verify
