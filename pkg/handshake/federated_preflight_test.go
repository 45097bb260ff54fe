package handshake

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/kube/kubetest"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// issuerServer is an issuer's discovery document and keys over TLS, answering each path with the status
// given (200 when not named), and the request with its CA.
func issuerServer(t *testing.T, status map[string]int, noJWKS bool) (*httptest.Server, *v1alpha1.FederatedRequest, discoveryDocument) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("the preflight sent credentials: %q", r.Header.Get("Authorization"))
		}
		if code, ok := status[r.URL.Path]; ok {
			w.WriteHeader(code)
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	doc := discoveryDocument{Issuer: srv.URL, JWKSURI: srv.URL + "/openid/v1/jwks"}
	if noJWKS {
		doc.JWKSURI = ""
	}
	return srv, &v1alpha1.FederatedRequest{Issuer: srv.URL, IssuerCA: ca, ServiceAccount: federatedRequest().ServiceAccount}, doc
}

// The preflight reads the discovery document and the keys as the provider's API server will (without
// credentials, verifying with the request's CA) and names what it lacks; nothing when both answer.
func TestPreflight(t *testing.T) {
	cases := []struct {
		name   string
		status map[string]int
		noJWKS bool
		caOf   func(*v1alpha1.FederatedRequest)
		want   string
	}{
		{name: "both readable"},
		{name: "discovery forbidden", status: map[string]int{"/.well-known/openid-configuration": 403},
			want: "forbidden to anonymous requests (403): bind ClusterRole system:service-account-issuer-discovery to Group system:unauthenticated"},
		{name: "anonymous refused", status: map[string]int{"/.well-known/openid-configuration": 401}, want: "refuses anonymous requests (401)"},
		{name: "keys forbidden", status: map[string]int{"/openid/v1/jwks": 403}, want: "the issuer's keys"},
		{name: "keys answer 500", status: map[string]int{"/openid/v1/jwks": 500}, want: "answers 500 Internal Server Error"},
		{name: "no jwks_uri", noJWKS: true, want: "names no jwks_uri"},
		{name: "another CA", caOf: func(r *v1alpha1.FederatedRequest) { r.IssuerCA = nil }, want: "does not verify with the issuer CA the request carries"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, req, doc := issuerServer(t, c.status, c.noJWKS)
			if c.caOf != nil {
				c.caOf(req)
			}
			got := preflight(t.Context(), req, doc)
			switch {
			case c.want == "" && len(got) != 0:
				t.Errorf("findings %q, want none", got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
				t.Errorf("findings %q, want one saying %q", got, c.want)
			}
		})
	}
	// An issuer only the consumer's own network resolves is said first, whatever the rest answers (here,
	// nothing: the context is done, so no request leaves this machine).
	done, cancel := context.WithCancel(t.Context())
	cancel()
	got := preflight(done, &v1alpha1.FederatedRequest{Issuer: "https://kubernetes.default.svc.cluster.local", ServiceAccount: federatedRequest().ServiceAccount},
		discoveryDocument{Issuer: "https://kubernetes.default.svc.cluster.local"})
	if len(got) == 0 || !strings.Contains(got[0], "a name only this cluster's own network resolves") {
		t.Errorf("findings %q, want the cluster-internal issuer named first", got)
	}
}

func TestSameHost(t *testing.T) {
	for _, c := range []struct {
		server, issuer, discovery string
		want                      bool
	}{
		{"https://10.0.0.1:6443", "https://10.0.0.1:6443", "", true},
		{"https://10.0.0.1:6443", "https://issuer.example", "", false},
		{"https://10.0.0.1:6443", "https://kubernetes.default.svc", "https://10.0.0.1:6443/.well-known/openid-configuration", true},
		{"https://10.0.0.1:6443", "https://10.0.0.1:6443", "https://discovery.example/x", false},
	} {
		if got := sameHost(c.server, c.issuer, c.discovery); got != c.want {
			t.Errorf("sameHost(%q, %q, %q) = %v", c.server, c.issuer, c.discovery, got)
		}
	}
}

// fakeToken is a JWT whose claims name the ServiceAccount's UID, as a bound token's do (unsigned: only the
// consumer reads it here).
func fakeToken(uid string) string {
	claims, _ := json.Marshal(map[string]any{"kubernetes.io": map[string]any{"serviceaccount": map[string]any{"name": "deployer", "uid": uid}}})
	return "eyJhbGciOiJub25lIn0." + base64.RawURLEncoding.EncodeToString(claims) + ".c2ln"
}

// A federated identity's kubeconfig holds a token minted now, for the identity's audience and for ten
// minutes, of the ServiceAccount pinned by UID; a ServiceAccount made again under its name is refused.
func TestMintedKubeconfig(t *testing.T) {
	id := federatedIdentity([]byte("k"))
	sa := id.Spec.Federated.ServiceAccount
	for _, c := range []struct {
		name, uid, wantErr string
	}{
		{name: "the pinned ServiceAccount", uid: sa.UID},
		{name: "one made again under its name", uid: "99999999-0000-4000-8000-000000000000", wantErr: "UID 99999999-0000-4000-8000-000000000000, pinned " + sa.UID},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := fake.NewClientset()
			var asked *authv1.TokenRequest
			cs.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, runtime.Object, error) {
				ca, ok := a.(clienttesting.CreateAction)
				if !ok || a.GetSubresource() != "token" {
					return false, nil, nil
				}
				asked = ca.GetObject().(*authv1.TokenRequest)
				return true, &authv1.TokenRequest{Status: authv1.TokenRequestStatus{Token: fakeToken(c.uid), ExpirationTimestamp: metav1.NewTime(time.Now().Add(10 * time.Minute))}}, nil
			})
			data, tok, err := MintedKubeconfig(t.Context(), &member.Cluster{Kube: kubetest.Wrap(cs)}, id)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if asked == nil || len(asked.Spec.Audiences) != 1 || asked.Spec.Audiences[0] != id.Spec.Federated.Audience || asked.Spec.ExpirationSeconds == nil || *asked.Spec.ExpirationSeconds != 600 {
				t.Errorf("TokenRequest %+v, want the identity's audience alone, 600 s", asked)
			}
			cfg, err := clientcmd.Load(data)
			if err != nil {
				t.Fatal(err)
			}
			ctx := cfg.Contexts[cfg.CurrentContext]
			if u := cfg.AuthInfos[ctx.AuthInfo]; u.Token != tok.Token || u.Token == "" || cfg.Clusters[ctx.Cluster].Server != id.Spec.APIServer || ctx.Namespace != id.Spec.Namespace {
				t.Errorf("the kubeconfig: %+v %+v %+v", u, cfg.Clusters[ctx.Cluster], ctx)
			}
		})
	}
}
