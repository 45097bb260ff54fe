package kube

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// server records each request's method, path with query, and Accept header, and answers from answer.
type server struct {
	mu       sync.Mutex
	requests []string
	accepts  []string
	answer   func(w http.ResponseWriter, r *http.Request)
}

func newServer(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) (*server, Interface) {
	t.Helper()
	s := &server{answer: answer}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.RequestURI())
		s.accepts = append(s.accepts, r.Header.Get("Accept"))
		s.mu.Unlock()
		s.answer(w, r)
	}))
	t.Cleanup(hs.Close)
	k, err := NewForConfig(&rest.Config{Host: hs.URL, QPS: 50, Burst: 100})
	if err != nil {
		t.Fatal(err)
	}
	return s, k
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Every resource of the Interface is asked for at its API path: a misspelled resource or group would
// only show on a real cluster otherwise.
func TestEveryResourceAtItsPath(t *testing.T) {
	s, k := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"kind": "List", "apiVersion": "v1", "metadata": map[string]any{}, "items": []any{}})
	})
	ctx := context.Background()
	lo := metav1.ListOptions{}
	calls := map[string]func() error{
		"/api/v1/namespaces":                                           func() error { _, err := k.CoreV1().Namespaces().List(ctx, lo); return err },
		"/api/v1/nodes":                                                func() error { _, err := k.CoreV1().Nodes().List(ctx, lo); return err },
		"/api/v1/namespaces/a/secrets":                                 func() error { _, err := k.CoreV1().Secrets("a").List(ctx, lo); return err },
		"/api/v1/namespaces/a/configmaps":                              func() error { _, err := k.CoreV1().ConfigMaps("a").List(ctx, lo); return err },
		"/api/v1/namespaces/a/serviceaccounts":                         func() error { _, err := k.CoreV1().ServiceAccounts("a").List(ctx, lo); return err },
		"/api/v1/namespaces/a/pods":                                    func() error { _, err := k.CoreV1().Pods("a").List(ctx, lo); return err },
		"/api/v1/namespaces/a/services":                                func() error { _, err := k.CoreV1().Services("a").List(ctx, lo); return err },
		"/api/v1/namespaces/a/resourcequotas":                          func() error { _, err := k.CoreV1().ResourceQuotas("a").List(ctx, lo); return err },
		"/api/v1/namespaces/a/limitranges":                             func() error { _, err := k.CoreV1().LimitRanges("a").List(ctx, lo); return err },
		"/api/v1/namespaces/a/persistentvolumeclaims":                  func() error { _, err := k.CoreV1().PersistentVolumeClaims("a").List(ctx, lo); return err },
		"/apis/rbac.authorization.k8s.io/v1/namespaces/a/roles":        func() error { _, err := k.RbacV1().Roles("a").List(ctx, lo); return err },
		"/apis/rbac.authorization.k8s.io/v1/namespaces/a/rolebindings": func() error { _, err := k.RbacV1().RoleBindings("a").List(ctx, lo); return err },
		"/apis/rbac.authorization.k8s.io/v1/clusterroles":              func() error { _, err := k.RbacV1().ClusterRoles().List(ctx, lo); return err },
		"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings":       func() error { _, err := k.RbacV1().ClusterRoleBindings().List(ctx, lo); return err },
		"/apis/certificates.k8s.io/v1/certificatesigningrequests":      func() error { _, err := k.CertificatesV1().CertificateSigningRequests().List(ctx, lo); return err },
		"/apis/networking.k8s.io/v1/namespaces/a/networkpolicies":      func() error { _, err := k.NetworkingV1().NetworkPolicies("a").List(ctx, lo); return err },
		"/apis/coordination.k8s.io/v1/namespaces/a/leases":             func() error { _, err := k.CoordinationV1().Leases("a").List(ctx, lo); return err },
		"/apis/events.k8s.io/v1/namespaces/a/events":                   func() error { _, err := k.EventsV1().Events("a").List(ctx, lo); return err },
		"/apis/apps/v1/namespaces/a/daemonsets":                        func() error { _, err := k.AppsV1().DaemonSets("a").List(ctx, lo); return err },
		"/apis/apps/v1/namespaces/a/statefulsets":                      func() error { _, err := k.AppsV1().StatefulSets("a").List(ctx, lo); return err },
		"/apis/storage.k8s.io/v1/storageclasses":                       func() error { _, err := k.StorageV1().StorageClasses().List(ctx, lo); return err },
		"/apis/scheduling.k8s.io/v1/priorityclasses":                   func() error { _, err := k.SchedulingV1().PriorityClasses().List(ctx, lo); return err },
		"/apis/node.k8s.io/v1/runtimeclasses":                          func() error { _, err := k.NodeV1().RuntimeClasses().List(ctx, lo); return err },
		"/apis/authentication.k8s.io/v1/selfsubjectreviews": func() error {
			_, err := k.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			return err
		},
		"/apis/authorization.k8s.io/v1/subjectaccessreviews": func() error {
			_, err := k.AuthorizationV1().SubjectAccessReviews().Create(ctx, nil, metav1.CreateOptions{})
			return err
		},
		"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews": func() error {
			_, err := k.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, nil, metav1.CreateOptions{})
			return err
		},
	}
	for path, call := range calls {
		s.requests = nil
		if err := call(); err != nil && !strings.Contains(path, "review") {
			t.Errorf("%s: %v", path, err)
		}
		if len(s.requests) != 1 || !strings.HasSuffix(s.requests[0], " "+path) {
			t.Errorf("want one request to %s, got %q", path, s.requests)
		}
	}
}

// Built-in kinds are asked for in protobuf first, as client-go's own clients ask: the smaller, faster
// encoding, and the same requests the plugin sent before it had its own clients.
func TestPrefersProtobufAndSendsOptions(t *testing.T) {
	s, k := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, &corev1.Secret{TypeMeta: metav1.TypeMeta{Kind: "Secret", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "a", ResourceVersion: "7"}})
	})
	got, err := k.CoreV1().Secrets("a").Get(context.Background(), "x", metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "x" || got.ResourceVersion != "7" {
		t.Errorf("decoded %+v", got.ObjectMeta)
	}
	if s.requests[0] != "GET /api/v1/namespaces/a/secrets/x?resourceVersion=0" {
		t.Errorf("request %q", s.requests[0])
	}
	if !strings.HasPrefix(s.accepts[0], "application/vnd.kubernetes.protobuf") {
		t.Errorf("Accept %q, want protobuf first", s.accepts[0])
	}
}

// The two subresources the generic client has no verb for: a ServiceAccount's token and a CSR's approval.
func TestSubresources(t *testing.T) {
	s, k := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/token") {
			writeJSON(w, 201, &authenticationv1.TokenRequest{TypeMeta: metav1.TypeMeta{Kind: "TokenRequest", APIVersion: "authentication.k8s.io/v1"},
				Status: authenticationv1.TokenRequestStatus{Token: "t0k"}})
			return
		}
		writeJSON(w, 200, &certificatesv1.CertificateSigningRequest{TypeMeta: metav1.TypeMeta{Kind: "CertificateSigningRequest", APIVersion: "certificates.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "c"}})
	})
	ctx := context.Background()
	tr, err := k.CoreV1().ServiceAccounts("a").CreateToken(ctx, "sa", &authenticationv1.TokenRequest{}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || tr.Status.Token != "t0k" {
		t.Fatalf("CreateToken: %v %+v", err, tr)
	}
	csr, err := k.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, "c", &certificatesv1.CertificateSigningRequest{}, metav1.UpdateOptions{FieldManager: "m"})
	if err != nil || csr.Name != "c" {
		t.Fatalf("UpdateApproval: %v %+v", err, csr)
	}
	want := []string{
		"POST /api/v1/namespaces/a/serviceaccounts/sa/token?dryRun=All",
		"PUT /apis/certificates.k8s.io/v1/certificatesigningrequests/c/approval?fieldManager=m",
	}
	if !slices.Equal(s.requests, want) {
		t.Errorf("requests %q, want %q", s.requests, want)
	}
}

// An error answer is the API's Status, so that callers can tell NotFound from the rest.
func TestErrorsAreStatuses(t *testing.T) {
	_, k := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 404, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Reason: metav1.StatusReasonNotFound, Code: 404, Message: `configmaps "x" not found`})
	})
	_, err := k.CoreV1().ConfigMaps("a").Get(context.Background(), "x", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) || err.Error() != `configmaps "x" not found` {
		t.Errorf("got %v, want NotFound", err)
	}
	if _, err := k.Discovery().ServerResourcesForGroupVersion("example.com/v1"); !apierrors.IsNotFound(err) {
		t.Errorf("discovery: got %v, want NotFound", err)
	}
}
