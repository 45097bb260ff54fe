package credential

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// messageContext separates handshake signatures from every other use of an Ed25519 key. v2 added the
// proxy URL: a signature covers every field of a Tenant the provider acts on.
const messageContext = "kubectl-federate handshake v2"

// userContext derives issuance user names; it stays at v1 so that names do not change with the message.
const userContext = "kubectl-federate handshake v1"

// Message is what the consumer signs: it binds the provider, the consumer, the nonce, the exact CSR and
// the proxy URL the provider will hand back, so a signature made for one pairing, one CSR or one route
// verifies for no other. Cluster IDs and the nonce are validated before they get here (DNS labels,
// base64url), so none contains the separator; the proxy URL is hashed, so it cannot inject one.
func Message(providerID, consumerID, nonce string, csrDER []byte, proxyURL string) []byte {
	sum := sha256.Sum256(csrDER)
	proxy := sha256.Sum256([]byte(proxyURL))
	return []byte(strings.Join([]string{
		messageContext,
		"provider=" + providerID,
		"consumer=" + consumerID,
		"nonce=" + nonce,
		"csr-sha256=" + hex.EncodeToString(sum[:]),
		"proxy-url-sha256=" + hex.EncodeToString(proxy[:]),
	}, "\n"))
}

// Sign signs msg with the handshake key.
func Sign(key ed25519.PrivateKey, msg []byte) []byte { return ed25519.Sign(key, msg) }

// VerifySignature checks an Ed25519 signature, naming what is wrong with the key or the signature.
func VerifySignature(publicKey, msg, sig []byte) error {
	if len(publicKey) != ed25519.PublicKeySize {
		return fmt.Errorf("spec.publicKey: must be a %d-byte Ed25519 key, got %d bytes", ed25519.PublicKeySize, len(publicKey))
	}
	if len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("spec.signature: must be %d bytes, got %d", ed25519.SignatureSize, len(sig))
	}
	if !ed25519.Verify(ed25519.PublicKey(publicKey), msg, sig) {
		return errors.New("spec.signature: does not verify with spec.publicKey for this provider, consumer, nonce, CSR and proxy URL (the request was altered, or made for another nonce)")
	}
	return nil
}

// ExpectedUser is the Kubernetes user name of the identity issued against a nonce. Nonces are random and
// single-use, so each issuance has its own user, and RBAC bound to it never applies to an older
// certificate. The name reveals nothing of the nonce.
func ExpectedUser(consumerID, nonce string) string {
	sum := sha256.Sum256([]byte(userContext + " user\n" + nonce))
	return member.UserPrefix + consumerID + ":" + hex.EncodeToString(sum[:8])
}

// Fingerprint is the printable SHA-256 fingerprint of a handshake public key.
func Fingerprint(publicKey []byte) string {
	sum := sha256.Sum256(publicKey)
	return "SHA256:" + hex.EncodeToString(sum[:])
}

// sliceContext separates ResourceSlice signatures from handshake signatures made with the same key.
const sliceContext = "kubectl-federate resourceslice v1"

// SliceMessage is what the consumer signs for a ResourceSlice: provider, consumer, slice name, class, the
// resources asked (canonical, sorted) and the exact CSR, so that a request altered in any of them, moved to
// another consumer or provider, or given another key, verifies for nothing. IDs and slice names are DNS
// labels and resources are validated before they get here; the class is hashed, so nothing can inject a
// separator.
func SliceMessage(providerID, consumerID, slice, class string, resources map[string]string, csrDER []byte) []byte {
	sum := sha256.Sum256(csrDER)
	cls := sha256.Sum256([]byte(class))
	res := sha256.Sum256([]byte(canonicalResources(resources)))
	return []byte(strings.Join([]string{
		sliceContext,
		"provider=" + providerID,
		"consumer=" + consumerID,
		"slice=" + slice,
		"class-sha256=" + hex.EncodeToString(cls[:]),
		"resources-sha256=" + hex.EncodeToString(res[:]),
		"csr-sha256=" + hex.EncodeToString(sum[:]),
	}, "\n"))
}

// SliceUser is the Kubernetes user of a slice's identity, derived from the slice's client public key
// (its PKIX DER): a new key is a new user, so a RoleBinding for one slice request never applies to an
// earlier certificate of the same slice.
func SliceUser(consumerID, slice string, publicKeyDER []byte) string {
	sum := sha256.Sum256(append([]byte(sliceContext+" user\n"), publicKeyDER...))
	return member.UserPrefix + consumerID + ":slice-" + slice + ":" + hex.EncodeToString(sum[:8])
}

// canonicalResources is the signed form of a slice's resources: sorted name=value lines, the values
// exactly as written.
func canonicalResources(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k + "=" + m[k] + "\n")
	}
	return b.String()
}
