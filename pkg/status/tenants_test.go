package status

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/kube/kubetest"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// tenantsJSON is a Tenant list as an API server sends it, managed fields and all.
const tenantsJSON = `{"apiVersion":"federate.dev/v1alpha1","kind":"TenantList","metadata":{"resourceVersion":"9"},"items":[
 {"apiVersion":"federate.dev/v1alpha1","kind":"Tenant","metadata":{"name":"c1","namespace":"federate-tenant-c1","labels":{"a":"b"},
  "managedFields":[{"manager":"kubectl-federate","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:clusterID":{}}}}]},
  "spec":{"clusterID":"c1","providerClusterID":"p","publicKey":"AQI=","csr":"AwQ=","signature":"BQY=","proxyURL":"http://proxy"},
  "status":{"phase":"Issued","user":"federate:c1","notAfter":"2026-12-01T00:00:00Z","credential":"token","clusterRole":"edit",
   "sandbox":{"podSecurity":"restricted"},"lifetime":"24h0m0s","cordoned":true}},
 {"apiVersion":"federate.dev/v1alpha1","kind":"Tenant","metadata":{"name":"c2","namespace":"federate-tenant-c2"},"spec":{"clusterID":"c2"},"status":{}}]}`

// TestListTenantsDecodesTheServersJSON: on an API server, the list's JSON gives the same Tenants (the
// fields status reads) as the dynamic client would, and a missing CRD is no Tenant at all.
func TestListTenantsDecodesTheServersJSON(t *testing.T) {
	crd := true
	var asked string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = r.URL.Path + "?" + r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		if !crd {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
			return
		}
		_, _ = w.Write([]byte(tenantsJSON))
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &member.Cluster{Kube: kubetest.Wrap(kube), Dynamic: dyn}
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=kubectl-federate"}
	got, err := listTenants(context.Background(), c, sel)
	if err != nil {
		t.Fatal(err)
	}
	if want := "/apis/federate.dev/v1alpha1/tenants?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dkubectl-federate"; asked != want {
		t.Errorf("asked for %s, want %s", asked, want)
	}
	viaDynamic, err := dynamicTenants(context.Background(), c, sel)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(viaDynamic) != 2 {
		t.Fatalf("%d and %d tenants, want 2", len(got), len(viaDynamic))
	}
	for i := range got {
		d := viaDynamic[i]
		w := v1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Labels: d.Labels}, Spec: d.Spec, Status: d.Status}
		if !reflect.DeepEqual(got[i], w) {
			t.Errorf("tenant %d:\n got %+v\nwant %+v", i, got[i], w)
		}
	}
	first := got[0]
	if first.Namespace != "federate-tenant-c1" || first.Labels["a"] != "b" || first.Spec.ProxyURL != "http://proxy" || !first.Status.Cordoned ||
		first.Status.Sandbox == nil || first.Status.Sandbox.PodSecurity != "restricted" || first.Status.Lifetime == nil ||
		first.Status.Lifetime.Duration != 24*time.Hour || first.Status.NotAfter == nil || first.Status.NotAfter.Year() != 2026 {
		t.Errorf("first tenant decoded as %+v", first)
	}
	crd = false
	if got, err := listTenants(context.Background(), c, sel); err != nil || got != nil {
		t.Errorf("with no Tenant CRD: %v, %v; want none, no error", got, err)
	}
}
