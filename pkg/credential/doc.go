// Package credential is how a provider issues and checks a credential: client keys and CSRs, the
// Kubernetes CSR API, ServiceAccount tokens when no certificate can be issued, and the signed handshake
// message and MACs that bind a credential to the request it answers. It knows clusters only through
// package member.
//
// One job per file:
//
//	issue.go      the one issuance path: a certificate through the CSR API, else a token, checked once issued
//	csr.go        client keys and CSRs: build, parse once, check exactly; certificates parsed once
//	csrapi.go     the Kubernetes CSR API: create, approve exactly ours, wait, check the certificate
//	token.go      the ServiceAccount token credential: TokenRequest, when a certificate cannot be issued
//	federated.go  the federated identity: its signed request, its naming, tokens minted on the consumer
//	message.go    the signed handshake message and issuance user names
//	integrity.go  the nonce-keyed MACs that seal identity.yaml
package credential
