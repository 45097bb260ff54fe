package handshake

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/federate-dev/kubectl-federate/pkg/kube/kubetest"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// TestAuthenticatorFor: the entry for a request, user and audience is the one the Tenant recording them
// gives; a user that is not the request's federated user gives none.
func TestAuthenticatorFor(t *testing.T) {
	tenant := federatedTenant(t)
	want, err := Authenticator(tenant)
	if err != nil {
		t.Fatal(err)
	}
	got, err := AuthenticatorFor(tenant.Spec.ClusterID, tenant.Spec.Federated, tenant.Status.User, tenant.Status.Audience)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("AuthenticatorFor\n%+v\nAuthenticator\n%+v", got, want)
	}
	if e, err := AuthenticatorFor(tenant.Spec.ClusterID, tenant.Spec.Federated, "system:admin", tenant.Status.Audience); err == nil {
		t.Fatalf("an entry for user system:admin: %+v", e)
	}
}

// TestDiagnoseAuthenticatorReadsMetrics: the diagnosis reads the API server's /metrics; when they cannot
// be read it says nothing.
func TestDiagnoseAuthenticatorReadsMetrics(t *testing.T) {
	h := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(testIssuer)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") == "Bearer reader" {
			_, _ = fmt.Fprintf(w, "# TYPE x gauge\n%s{jwt_issuer_hash=%q,result=\"failure\"} 1.7e+09\n", metricJWKSFetch, h)
			return
		}
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`, http.StatusForbidden)
	}))
	defer srv.Close()
	cluster := func(token string) *member.Cluster {
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, BearerToken: token})
		if err != nil {
			t.Fatal(err)
		}
		return &member.Cluster{Kube: kubetest.Wrap(cs)}
	}
	if got := DiagnoseAuthenticator(context.Background(), cluster("reader"), testIssuer); !strings.Contains(got, "cannot fetch its keys") {
		t.Fatalf("diagnosis %q does not say the keys cannot be fetched", got)
	}
	if got := DiagnoseAuthenticator(context.Background(), cluster("other"), testIssuer); got != "" {
		t.Fatalf("diagnosis %q from metrics that could not be read", got)
	}
}
