package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// rec records every request a server is sent, and answers each with a protobuf NotFound.
type rec struct {
	mu  sync.Mutex
	log []string
}

func (r *rec) server(t *testing.T) *httptest.Server {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		b, _ := io.ReadAll(q.Body)
		r.mu.Lock()
		r.log = append(r.log, fmt.Sprintf("%s %s accept=%q ct=%q ua=%q body=%x", q.Method, q.URL.RequestURI(), q.Header.Get("Accept"), q.Header.Get("Content-Type"), q.Header.Get("User-Agent"), b))
		r.mu.Unlock()
		protoStatus(t, w, 404, metav1.StatusReasonNotFound)
	}))
	t.Cleanup(hs.Close)
	return hs
}

// The plugin's clients send exactly the requests client-go's clientset sends for the same calls (method,
// path and query, Accept, Content-Type, User-Agent, body), in protobuf and in the JSON a dry run sets.
// client-go is linked here, in the test, only.
func TestSameRequestsAsClientGo(t *testing.T) {
	for _, dry := range []bool{false, true} {
		var a, b rec
		ha, hb := a.server(t), b.server(t)
		cfg := func(h string) *rest.Config {
			c := &rest.Config{Host: h, QPS: 50, Burst: 100, UserAgent: "ua"}
			if dry {
				c.ContentType, c.AcceptContentTypes = "application/json", "application/json"
			}
			return c
		}
		ours, err := NewForConfig(cfg(ha.URL))
		if err != nil {
			t.Fatal(err)
		}
		cg, err := kubernetes.NewForConfig(cfg(hb.URL))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		ts := int64(5)
		force := true
		lo := metav1.ListOptions{LabelSelector: "a=b", FieldSelector: "metadata.name=x", ResourceVersion: "0", TimeoutSeconds: &ts, Limit: 3}
		pre := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptrUID("u")}, DryRun: []string{"All"}}
		// ours
		_, _ = ours.CoreV1().Secrets("a").Get(ctx, "x", metav1.GetOptions{ResourceVersion: "1"})
		_, _ = ours.CoreV1().Secrets("a").List(ctx, lo)
		if w, err := ours.CoreV1().Secrets("a").Watch(ctx, lo); err == nil {
			w.Stop()
		}
		_, _ = ours.CoreV1().ConfigMaps("a").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{FieldManager: "m", DryRun: []string{"All"}})
		_, _ = ours.CoreV1().ConfigMaps("a").Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "3"}}, metav1.UpdateOptions{FieldValidation: "Strict"})
		_ = ours.RbacV1().RoleBindings("a").Delete(ctx, "x", pre)
		_ = ours.CoreV1().Secrets("a").DeleteCollection(ctx, pre, lo)
		_, _ = ours.RbacV1().RoleBindings("a").Patch(ctx, "x", types.ApplyPatchType, []byte(`{"a":1}`), metav1.PatchOptions{FieldManager: "m", Force: &force})
		_, _ = ours.CoreV1().Namespaces().Patch(ctx, "x", types.MergePatchType, []byte(`{"a":1}`), metav1.PatchOptions{}, "status")
		_, _ = ours.CoreV1().ServiceAccounts("a").CreateToken(ctx, "sa", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"x"}}}, metav1.CreateOptions{DryRun: []string{"All"}})
		_, _ = ours.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, "c", &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.UpdateOptions{})
		_, _ = ours.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{}, metav1.CreateOptions{})
		_, _ = ours.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		_, _ = ours.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
		_, _ = ours.Discovery().ServerVersion()
		_, _ = ours.Discovery().ServerResourcesForGroupVersion("rbac.authorization.k8s.io/v1")
		_, _ = ours.Discovery().RESTClient().Get().AbsPath("/apis/x/v1/t").Param("labelSelector", "a").Do(ctx).Raw()
		_, _ = ours.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		// client-go
		_, _ = cg.CoreV1().Secrets("a").Get(ctx, "x", metav1.GetOptions{ResourceVersion: "1"})
		_, _ = cg.CoreV1().Secrets("a").List(ctx, lo)
		if w, err := cg.CoreV1().Secrets("a").Watch(ctx, lo); err == nil {
			w.Stop()
		}
		_, _ = cg.CoreV1().ConfigMaps("a").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{FieldManager: "m", DryRun: []string{"All"}})
		_, _ = cg.CoreV1().ConfigMaps("a").Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "3"}}, metav1.UpdateOptions{FieldValidation: "Strict"})
		_ = cg.RbacV1().RoleBindings("a").Delete(ctx, "x", pre)
		_ = cg.CoreV1().Secrets("a").DeleteCollection(ctx, pre, lo)
		_, _ = cg.RbacV1().RoleBindings("a").Patch(ctx, "x", types.ApplyPatchType, []byte(`{"a":1}`), metav1.PatchOptions{FieldManager: "m", Force: &force})
		_, _ = cg.CoreV1().Namespaces().Patch(ctx, "x", types.MergePatchType, []byte(`{"a":1}`), metav1.PatchOptions{}, "status")
		_, _ = cg.CoreV1().ServiceAccounts("a").CreateToken(ctx, "sa", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"x"}}}, metav1.CreateOptions{DryRun: []string{"All"}})
		_, _ = cg.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, "c", &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.UpdateOptions{})
		_, _ = cg.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{}, metav1.CreateOptions{})
		_, _ = cg.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		_, _ = cg.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
		_, _ = cg.Discovery().ServerVersion()
		_, _ = cg.Discovery().ServerResourcesForGroupVersion("rbac.authorization.k8s.io/v1")
		_, _ = cg.Discovery().RESTClient().Get().AbsPath("/apis/x/v1/t").Param("labelSelector", "a").Do(ctx).Raw()
		_, _ = cg.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if len(a.log) != len(b.log) {
			t.Fatalf("dry=%v: %d vs %d requests", dry, len(a.log), len(b.log))
		}
		for i := range a.log {
			if a.log[i] != b.log[i] {
				t.Errorf("dry=%v request %d differs:\n ours %s\n c-go %s", dry, i, a.log[i], b.log[i])
			}
		}
	}
}

func ptrUID(s string) *types.UID { u := types.UID(s); return &u }

// protoStatus answers with a Status of code and reason, in protobuf.
func protoStatus(t *testing.T, w http.ResponseWriter, code int, reason metav1.StatusReason) {
	s := theCodecs().scheme
	enc := protobuf.NewSerializer(s, s)
	st := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: reason, Code: int32(code), Message: "m"}
	w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
	w.WriteHeader(code)
	if err := enc.Encode(st, w); err != nil {
		t.Error(err)
	}
}

// Error answers in protobuf are the API's Status: callers tell NotFound, Conflict, Invalid, AlreadyExists and
// Forbidden apart.
func TestProtobufStatuses(t *testing.T) {
	for _, c := range []struct {
		code   int
		reason metav1.StatusReason
		is     func(error) bool
	}{{404, metav1.StatusReasonNotFound, apierrors.IsNotFound}, {409, metav1.StatusReasonConflict, apierrors.IsConflict},
		{422, metav1.StatusReasonInvalid, apierrors.IsInvalid}, {409, metav1.StatusReasonAlreadyExists, apierrors.IsAlreadyExists},
		{403, metav1.StatusReasonForbidden, apierrors.IsForbidden}} {
		_, k := newServer(t, func(w http.ResponseWriter, r *http.Request) { protoStatus(t, w, c.code, c.reason) })
		_, err := k.CoreV1().ConfigMaps("a").Update(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.UpdateOptions{})
		if !c.is(err) {
			t.Errorf("%d %s: got %#v", c.code, c.reason, err)
		}
		err = k.RbacV1().RoleBindings("a").Delete(context.Background(), "x", metav1.DeleteOptions{})
		if !c.is(err) {
			t.Errorf("delete %d %s: got %#v", c.code, c.reason, err)
		}
	}
}

// A protobuf watch decodes its events into typed objects, and an ERROR event into the Status it carries.
func TestProtobufWatch(t *testing.T) {
	_, k := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		s := theCodecs().scheme
		ser := protobuf.NewSerializer(s, s)
		raw := protobuf.NewRawSerializer(s, s)
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
		w.WriteHeader(200)
		enc := streaming.NewEncoder(protobuf.LengthDelimitedFramer.NewFrameWriter(w), raw)
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "x"}}
		var buf = &bytesBuf{}
		_ = ser.Encode(cm, buf)
		ev := &metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: buf.b}}
		if err := enc.Encode(ev); err != nil {
			t.Error(err)
		}
		sb := &bytesBuf{}
		_ = ser.Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonExpired, Code: 410}, sb)
		if err := enc.Encode(&metav1.WatchEvent{Type: "ERROR", Object: runtime.RawExtension{Raw: sb.b}}); err != nil {
			t.Error(err)
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done() // open until the client stops the watch
	})
	wi, err := k.CoreV1().ConfigMaps("a").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer wi.Stop()
	ev := <-wi.ResultChan()
	if ev.Type != watch.Added {
		t.Fatalf("event %#v", ev)
	}
	if cm, ok := ev.Object.(*corev1.ConfigMap); !ok || cm.Name != "x" {
		t.Fatalf("object %#v", ev.Object)
	}
	ev = <-wi.ResultChan()
	if err := apierrors.FromObject(ev.Object); ev.Type != watch.Error || !apierrors.IsResourceExpired(err) {
		t.Fatalf("error event %#v %v", ev, err)
	}
}

type bytesBuf struct{ b []byte }

func (b *bytesBuf) Write(p []byte) (int, error) { b.b = append(b.b, p...); return len(p), nil }
