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
//	exchange_provider.go  the provider's side: list, allow, deny exactly what was shown
//	reach.go      what an exchange target can reach, shown before the provider consents
//	rbac.go       the impersonation rules of a target and a scope
package exchange
