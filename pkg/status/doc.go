// Package status is what a cluster holds and provides, proven rather than assumed: every credential and
// when it expires, checks that prove its rights (not only that it authenticates), exports, cordons and
// what a removal left behind. It only reads.
//
// One job per file:
//
//	status.go     status: credentials, expiry, checks that prove rights, leftovers
//	federated.go  the proof of a federated identity, through a token minted now
//	netpol.go     whether a known NetworkPolicy engine runs, for the provider's --check
//	tenants.go    the Tenant list read in one pass of its JSON, only the fields status shows
package status
