// Package exchange is identity exchange, whole: the rules (cluster-gateway's ClientIdentityExchanger:
// which of a consumer cluster's users reaches a provider as which identity), the external exchange
// service, and the protocol on both sides: a consumer's request, the provider's listing of what each
// request would let its user reach, and a consent that grants exactly what was listed, through
// impersonation bound to the target and scope, constrained where the provider enforces it.
//
// One job per file:
//
//	rules.go      the rule file: parse, validate, resolve a user to the winning rule, hash a grant
//	scope.go      a rule's scope: verbs, resources and namespaces, canonical
//	external.go   the external exchange service: ask it, trust only its CA
//	exchange.go   the consumer's side: rules on the cluster, resolution, requests, credentials held
//	exchange_provider.go  the provider's side: what it holds of a consumer (requests, decisions, RBAC), listed
//	allow.go      the provider's consent: exactly what was shown, recorded before a certificate exists
//	deny.go       taking back: deny, grants withdrawn by the consumer, every grant of a revoked consumer
//	decisions.go  the provider's records of its answers, in federate-system, where no tenant writes
//	grant_rbac.go a grant's RBAC: built once, printed before issuing, applied as printed
//	reach.go      what an exchange target can reach, shown before the provider consents
//	identities.go reach into namespaces: who may run code, read Secrets or mint tokens where identities are
//	rbac.go       the impersonation rules of a target and a scope
package exchange
