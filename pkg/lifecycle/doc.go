// Package lifecycle is what happens to a pairing after and around the handshake: authenticate (every
// step of both sides in one process), renew with the recorded settings, revoke and unauthenticate so
// nothing revoked regains rights, cordon, uncordon and drain, mesh and unmesh of a set of clusters, and
// what a cluster provides and holds. The protocol's cross-room tests live here, at the top, where every
// room can be reached.
//
// One job per file:
//
//	authenticate.go  the four steps in one process
//	federated.go  a federated pairing's end: its authenticator entry, and the proof through a minted token
//	renew.go      renew: a new credential with the pairing's recorded settings
//	revoke.go     take a tenant's rights away, in every namespace it was granted, and stop what it runs
//	remove.go     unauthenticate: both sides' removal
//	cordon.go     cordon, uncordon and drain of a consumer on a provider
//	mesh.go       mesh and unmesh: every directed pair of a set of clusters
//	info.go       what this cluster provides and holds
package lifecycle
