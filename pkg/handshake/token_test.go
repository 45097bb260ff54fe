package handshake

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
)

func jwt(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(claims)) + ".c2ln"
}

func TestTokenClaims(t *testing.T) {
	user := "system:serviceaccount:federate-tenant-c1:federate-credential-abcde"
	for _, tc := range []struct {
		name, token, err string
	}{
		{"good", jwt(`{"sub":"` + user + `","exp":1900000000}`), ""},
		{"two parts", "a.b", "is not a JSON Web Token"},
		{"not base64", "a.!!.c", "claims are not base64url"},
		{"not json", jwt(`nope`), "claims:"},
		{"no expiry", jwt(`{"sub":"` + user + `"}`), "has no expiry"},
		{"a user, not a ServiceAccount", jwt(`{"sub":"alice","exp":1900000000}`), "is not a ServiceAccount"},
		{"a ServiceAccount with a colon in its name", jwt(`{"sub":"system:serviceaccount:ns:a:b","exp":1900000000}`), "is not a ServiceAccount"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub, exp, err := credential.TokenClaims("spec.token", tc.token)
			if tc.err == "" {
				if err != nil || sub != user || exp.Unix() != 1900000000 {
					t.Fatalf("got %q %v %v", sub, exp, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "spec.token: ") {
				t.Fatalf("err = %v, want spec.token: ...%s", err, tc.err)
			}
		})
	}
}

func TestCredentialSubjects(t *testing.T) {
	sa := credential.SubjectFor("system:serviceaccount:federate-tenant-c1:federate-credential-x1")
	if sa.Kind != "ServiceAccount" || sa.Namespace != "federate-tenant-c1" || sa.Name != "federate-credential-x1" || sa.APIGroup != "" {
		t.Errorf("ServiceAccount subject: %+v", sa)
	}
	u := credential.SubjectFor("kubectl-federate:c1:abc")
	if u.Kind != "User" || u.Name != "kubectl-federate:c1:abc" || u.APIGroup != "rbac.authorization.k8s.io" {
		t.Errorf("user subject: %+v", u)
	}
	for _, user := range []string{"system:serviceaccount:federate-tenant-c1:federate-credential-x1", "kubectl-federate:c1:abc"} {
		if got := credential.SubjectUser(credential.SubjectFor(user)); got != user {
			t.Errorf("round trip of %q: %q", user, got)
		}
	}
	for user, want := range map[string]bool{
		"system:serviceaccount:federate-tenant-c1:federate-credential-x1": true,
		"system:serviceaccount:federate-tenant-c1:federate-credential":    false, // no suffix: not one we make
		"system:serviceaccount:federate-tenant-c2:federate-credential-x1": false, // another namespace
		"system:serviceaccount:federate-tenant-c1:default":                false,
		"federate-credential-x1": false,
	} {
		if got := credential.IsCredentialUser(user, "federate-tenant-c1"); got != want {
			t.Errorf("isCredentialUser(%q) = %v", user, got)
		}
	}
}

// A token identity seals its credential and token: swapping, removing or adding either fails; a
// certificate identity's MACs are what they always were.
func TestTokenIdentityIntegrity(t *testing.T) {
	key := credential.IntegrityKey("nonce-value")
	spec := v1alpha1.IdentitySpec{ClusterID: "p1", ConsumerClusterID: "c1", Namespace: "federate-tenant-c1", APIServer: "https://p1:6443",
		Credential: v1alpha1.CredentialToken, Token: jwt(`{"sub":"system:serviceaccount:federate-tenant-c1:federate-credential-x1","exp":1900000000}`)}
	credential.SealIdentity(key, &spec)
	if err := credential.VerifyIdentity(key, &spec); err != nil {
		t.Fatal(err)
	}
	swapped := spec
	swapped.Token = jwt(`{"sub":"system:serviceaccount:federate-tenant-c1:federate-credential-x2","exp":1900000000}`)
	if err := credential.VerifyIdentity(key, &swapped); err == nil || !strings.Contains(err.Error(), "spec.token: does not match") {
		t.Errorf("swapped token: %v", err)
	}
	stripped := spec
	stripped.Credential, stripped.Token = "", ""
	if err := credential.VerifyIdentity(key, &stripped); err == nil {
		t.Error("an identity stripped of its token still verifies")
	}
	cert := v1alpha1.IdentitySpec{ClusterID: "p1", ConsumerClusterID: "c1", Namespace: "federate-tenant-c1", APIServer: "https://p1:6443", Certificate: []byte("pem")}
	credential.SealIdentity(key, &cert)
	if _, ok := cert.Integrity["token"]; ok || len(cert.Integrity) != 7 {
		t.Errorf("a certificate identity's MACs changed: %v", cert.Integrity)
	}
	withToken := cert
	withToken.Token = spec.Token
	if err := credential.VerifyIdentity(key, &withToken); err == nil {
		t.Error("a token added to a certificate identity verifies")
	}
}

func TestValidateTokenIdentity(t *testing.T) {
	now := time.Unix(1800000000, 0)
	base := func() *v1alpha1.Identity {
		return &v1alpha1.Identity{Spec: v1alpha1.IdentitySpec{ClusterID: "p1", ConsumerClusterID: "c1", Namespace: "federate-tenant-c1", APIServer: "https://p1:6443",
			Credential: v1alpha1.CredentialToken, Token: jwt(`{"sub":"system:serviceaccount:federate-tenant-c1:federate-credential-x1","exp":1900000000}`)}}
	}
	cred, err := ValidateIdentity(base(), "c1", now)
	if err != nil || cred.Cert != nil || cred.User != "system:serviceaccount:federate-tenant-c1:federate-credential-x1" || cred.NotAfter.Unix() != 1900000000 {
		t.Fatalf("%+v %v", cred, err)
	}
	for name, tc := range map[string]struct {
		mutate func(*v1alpha1.Identity)
		err    string
	}{
		"expired": {func(id *v1alpha1.Identity) {
			id.Spec.Token = jwt(`{"sub":"system:serviceaccount:federate-tenant-c1:federate-credential-x1","exp":1700000000}`)
		}, "spec.token: expired"},
		"another namespace's": {func(id *v1alpha1.Identity) {
			id.Spec.Token = jwt(`{"sub":"system:serviceaccount:kube-system:federate-credential-x1","exp":1900000000}`)
		}, "not a credential ServiceAccount"},
		"another ServiceAccount": {func(id *v1alpha1.Identity) {
			id.Spec.Token = jwt(`{"sub":"system:serviceaccount:federate-tenant-c1:default","exp":1900000000}`)
		}, "not a credential ServiceAccount"},
		"no token":               {func(id *v1alpha1.Identity) { id.Spec.Token = "" }, "spec.token: is empty"},
		"and a certificate":      {func(id *v1alpha1.Identity) { id.Spec.Certificate = []byte("x") }, "spec.certificate: a token identity carries no certificate"},
		"unknown credential":     {func(id *v1alpha1.Identity) { id.Spec.Credential = "Password" }, "spec.credential \"Password\""},
		"token on a certificate": {func(id *v1alpha1.Identity) { id.Spec.Credential = "" }, "spec.token: a certificate identity carries no token"},
	} {
		t.Run(name, func(t *testing.T) {
			id := base()
			tc.mutate(id)
			if _, err := ValidateIdentity(id, "c1", now); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
		})
	}
}
