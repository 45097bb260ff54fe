//go:build e2e

package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// An attempt is one token presented to the provider, and what it must get: refused outright (401), or
// taken for exactly want (the pairing's user, in no group but system:authenticated) and allowed, in the
// tenant namespace, exactly what allowed says.
type attempt struct {
	name    string
	token   func() string
	refused bool
	want    string
	allowed bool
}

// attemptRow is an attempt's outcome, for the closing table.
type attemptRow struct{ name, outcome string }

// tryAll presents every attempt to the provider and fails on any that gets more than it should; it returns
// the outcomes, as the table the closing note gives.
func tryAll(t *testing.T, p *kubeenv.Cluster, ns string, attempts []attempt) []attemptRow {
	t.Helper()
	var rows []attemptRow
	for _, at := range attempts {
		u, err := whoAmI(t, p, at.token())
		switch {
		case at.refused && apierrors.IsUnauthorized(err):
			rows = append(rows, attemptRow{at.name, fmt.Sprintf("refused: %d %v", err.(apierrors.APIStatus).Status().Code, err)})
			continue
		case at.refused:
			t.Errorf("%s: want 401, got user %+v, error %v", at.name, u, err)
			continue
		case err != nil:
			t.Errorf("%s: want it authenticated as %s, got %v", at.name, at.want, err)
			continue
		case u.Username != at.want || len(u.Groups) != 1 || u.Groups[0] != "system:authenticated":
			t.Errorf("%s: authenticated as %q in groups %v, want %q in system:authenticated only", at.name, u.Username, u.Groups, at.want)
			continue
		}
		allowed, err := mayCreatePods(t, p, at.token(), ns)
		if err != nil || allowed != at.allowed {
			t.Errorf("%s: may create pods in %s: %v (%v), want %v", at.name, ns, allowed, err, at.allowed)
			continue
		}
		outcome := "authenticated as the pairing's user, groups [system:authenticated]; "
		if allowed {
			outcome += "may create pods in " + ns
		} else {
			outcome += "authorized for nothing in " + ns
		}
		rows = append(rows, attemptRow{at.name, outcome})
	}
	return rows
}

// logTable writes the outcomes as a Markdown table.
func logTable(t *testing.T, title string, rows []attemptRow) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n| attempt | outcome |\n|---|---|\n", title)
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s |\n", r.name, r.outcome)
	}
	t.Log(b.String())
}

// claimsOf decodes a JWT's header and claims.
func claimsOf(t *testing.T, token string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	for i, v := range []*map[string]any{&header, &claims} {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatal(err)
		}
	}
	return header, claims
}

// forge signs header and claims with key (ES256), as whoever holds that key can.
func forge(t *testing.T, key *ecdsa.PrivateKey, header, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signed := enc(header) + "." + enc(claims)
	sum := sha256.Sum256([]byte(signed))
	r, s, err := ecdsa.Sign(rand.Reader, key, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// signingKey is c's ServiceAccount token signing key: what an attacker who took the consumer's control
// plane holds.
func signingKey(t *testing.T, c *kubeenv.Cluster) *ecdsa.PrivateKey {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(c.Dir, "sa.key"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k.(*ecdsa.PrivateKey)
}

// strangerKey is a signing key no cluster knows.
func strangerKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// with is claims with some replaced (a nil value removes the claim).
func with(claims map[string]any, changes map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range claims {
		out[k] = v
	}
	for k, v := range changes {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = v
	}
	return out
}

// fresh is claims issued now, living a minute.
func fresh(claims map[string]any) map[string]any {
	now := time.Now().Unix()
	return with(claims, map[string]any{"iat": now, "nbf": now, "exp": now + 60, "jti": fmt.Sprint(now, big.NewInt(now).Text(36))})
}
