// Package fakeapi is the fast tier's API server: client-go fake clientsets taught the few things a real
// API server (and its controllers) does that kubectl federate relies on: names from generateName, a CSR
// signer (honest, slow or dishonest), server-side apply that creates and replaces, DeleteCollection that
// honours its label selector, namespaces that terminate before they go, access reviews answered from the
// bindings, admission that refuses the sandbox's dry-run probes, a quota controller and CRD establishment
// that are instant. The domain's unit tests and the commands' tests (through a test factory) both run on
// it; everything that touches a real cluster is still proven end to end in test/e2e.
package fakeapi

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	authzv1 "k8s.io/api/authorization/v1"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
)

// Now is the fake clusters' clock.
var Now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// Names the fakes know, as the product spells them: the sandbox's label and policy prefix, the cordon
// label and probe annotation, and the tenant RoleBinding's name.
const (
	labelSandbox     = "federate.dev/sandbox"
	labelCordoned    = "federate.dev/cordoned"
	annotCordonProbe = "federate.dev/cordon-probe"
	sandboxPolicy    = "federate-sandbox"
)

// GVRs the dynamic fake lists, with their list kinds.
var (
	CRDs                = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	ClusterRoles        = rbacv1.SchemeGroupVersion.WithResource("clusterroles")
	ClusterRoleBindings = rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")
	RoleBindings        = rbacv1.SchemeGroupVersion.WithResource("rolebindings")
	ResourceQuotas      = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}

	ListKinds = map[schema.GroupVersionResource]string{
		v1alpha1.TenantGVR:             "TenantList",
		v1alpha1.IdentityGVR:           "IdentityList",
		v1alpha1.ResourceSliceGVR:      "ResourceSliceList",
		v1alpha1.ResourceSliceClassGVR: "ResourceSliceClassList",
		v1alpha1.NamespaceRequestGVR:   "NamespaceRequestList",
		v1alpha1.ExchangeRequestGVR:    "ExchangeRequestList",
		CRDs:                           "CustomResourceDefinitionList",
		ClusterRoles:                   "ClusterRoleList",
		ClusterRoleBindings:            "ClusterRoleBindingList",
		RoleBindings:                   "RoleBindingList",
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}:       "ValidatingAdmissionPolicyList",
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}: "ValidatingAdmissionPolicyBindingList",
		ResourceQuotas:                                                           "ResourceQuotaList",
		{Version: "v1", Resource: "limitranges"}:                                 "LimitRangeList",
		{Version: "v1", Resource: "serviceaccounts"}:                             "ServiceAccountList",
		{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}: "NetworkPolicyList",
		{Group: "apps", Version: "v1", Resource: "deployments"}:                  "DeploymentList",
		{Group: "apps", Version: "v1", Resource: "statefulsets"}:                 "StatefulSetList",
		{Group: "apps", Version: "v1", Resource: "daemonsets"}:                   "DaemonSetList",
		{Group: "apps", Version: "v1", Resource: "replicasets"}:                  "ReplicaSetList",
		{Group: "batch", Version: "v1", Resource: "cronjobs"}:                    "CronJobList",
		{Group: "batch", Version: "v1", Resource: "jobs"}:                        "JobList",
		{Version: "v1", Resource: "replicationcontrollers"}:                      "ReplicationControllerList",
	}
)

// Server is one fake cluster: its clientsets, its CA (which the signer signs with) and its knobs.
type Server struct {
	Clientset     *fake.Clientset
	DynamicClient *dynamicfake.FakeDynamicClient
	CA            *x509.Certificate
	Key           *ecdsa.PrivateKey

	mu       sync.Mutex
	approved []string // CSR names approved
	// Signer overrides what the signer does with an approved CSR (nil: sign it honestly).
	Signer func(csr *x509.CertificateRequest, seconds int32) *x509.Certificate
	// AdmitAll makes admission refuse nothing (a cluster without the policies).
	AdmitAll bool
	// DeferSigning makes the signer answer the approval first and write the certificate a moment later.
	DeferSigning bool
	// SARAllow, if set, answers SubjectAccessReviews instead of the bindings.
	SARAllow func(authzv1.SubjectAccessReviewSpec) bool
	// Guard, if set, is asked first about every request, as an API server's authorization and admission
	// would be: an error refuses the request with it, ErrAdmit admits a dry run (answered, not stored),
	// nil leaves it to the rest of the fake.
	Guard func(clienttesting.Action) error
	// Watches receives the resource of every watch the code under test starts.
	Watches chan string

	uids atomic.Int64 // the last UID given (creates may run at once)
	rvs  atomic.Int64 // the last resourceVersion given to a dynamic object written through a patch
}

// New returns a fake cluster holding objects, with the kube-system namespace every cluster has.
func New(t testing.TB, objects ...runtime.Object) *Server {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fake-ca"}, IsCA: true,
		NotBefore: Now.Add(-time.Hour), NotAfter: Now.Add(10 * 365 * 24 * time.Hour), BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	// A plain object tracker: the field-managed one of fake.NewClientset builds a REST mapper of the whole
	// scheme on every create and update (about half the unit tier's CPU); server-side apply, the one
	// thing it adds that the code uses, is taught below (applyTyped).
	kube := fake.NewSimpleClientset(objects...) //nolint:staticcheck // see above: NewClientset's tracker is the unit tier's main cost
	if err := kube.Tracker().Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "0123456789abcdef"}}); err != nil {
		t.Fatal(err)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), ListKinds)
	s := &Server{Clientset: kube, DynamicClient: dyn, CA: ca, Key: key, Watches: make(chan string, 100)}
	s.teach()
	return s
}

// Approved lists the names of the CSRs approved so far.
func (s *Server) Approved() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.approved...)
}

// AfterWatch runs fn once a watch of resource has started: what a controller does after the code under
// test began to wait for it.
func (s *Server) AfterWatch(resource string, fn func()) {
	go func() {
		for r := range s.Watches {
			if r == resource {
				fn()
				return
			}
		}
	}()
}

// Actions lists "verb resource[/sub]" of the typed client's recorded actions, in order.
func (s *Server) Actions() []string { return actionNames(s.Clientset.Actions()) }

// DynamicActions is Actions of the dynamic client (the federation's own resources).
func (s *Server) DynamicActions() []string { return actionNames(s.DynamicClient.Actions()) }

// actionNames lists "verb resource[/sub]" of actions, in order.
func actionNames(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		v := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			v += "/" + a.GetSubresource()
		}
		out = append(out, v)
	}
	return out
}

// Count counts the recorded actions "verb resource".
func (s *Server) Count(verb, resource string) int {
	n := 0
	for _, a := range s.Actions() {
		if a == verb+" "+resource {
			n++
		}
	}
	return n
}

func (s *Server) teach() {
	serial := 0
	// A dry run stores nothing: once admission (below) admits it, it is answered as if stored.
	s.Clientset.PrependReactor("*", "*", s.dryRun)
	s.Clientset.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		w, err := s.Clientset.Tracker().Watch(a.GetResource(), a.GetNamespace(), a.(clienttesting.WatchActionImpl).ListOptions)
		select { // only once the watcher is registered
		case s.Watches <- a.GetResource().Resource:
		default:
		}
		// The tracker ignores field selectors; a watch for one object by name (all the code starts) sees
		// only that object, as from an API server, not another one's deletion.
		if name, ok := a.(clienttesting.WatchActionImpl).GetWatchRestrictions().Fields.RequiresExactMatch("metadata.name"); ok && err == nil {
			w = watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
				m, err := meta.Accessor(ev.Object)
				return ev, err != nil || m.GetName() == name
			})
		}
		return true, w, err
	})
	// generateName: the API server makes the name.
	s.Clientset.PrependReactor("create", "certificatesigningrequests", func(a clienttesting.Action) (bool, runtime.Object, error) {
		csr := a.(clienttesting.CreateAction).GetObject().(*certv1.CertificateSigningRequest)
		if csr.Name == "" && csr.GenerateName != "" {
			serial++
			csr.Name = csr.GenerateName + strings.Repeat("x", 4) + string(rune('a'+serial%26))
			csr.Spec.Username = "operator"
		}
		return false, nil, nil
	})
	s.Clientset.PrependReactor("update", "certificatesigningrequests", s.sign)
	// DeleteCollection honours its label selector, as the API server does (the fake ignores it otherwise).
	s.Clientset.PrependReactor("delete-collection", "secrets", DeleteCollection(s.Clientset.Tracker(), corev1.SchemeGroupVersion.WithKind("Secret")))
	for gvr, list := range ListKinds {
		s.DynamicClient.PrependReactor("delete-collection", gvr.Resource, DeleteCollection(s.DynamicClient.Tracker(), gvr.GroupVersion().WithKind(strings.TrimSuffix(list, "List"))))
	}
	s.Clientset.PrependReactor("delete", "namespaces", s.terminate)
	s.Clientset.PrependReactor("create", "subjectaccessreviews", s.review)
	s.Clientset.PrependReactor("create", "selfsubjectaccessreviews", s.selfReview)
	for _, res := range []string{"pods", "services", "secrets"} {
		s.Clientset.PrependReactor("create", res, s.admit(res))
	}
	s.DynamicClient.PrependReactor("patch", "*", s.apply)
	s.Clientset.PrependReactor("patch", "*", s.applyTyped)
	// Every object gets a UID on create, as from an API server: the code tells objects apart by it.
	s.Clientset.PrependReactor("create", "*", s.assignUID)
	s.DynamicClient.PrependReactor("create", "*", s.assignUID)
	s.Clientset.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if s.Guard == nil {
			return false, nil, nil
		}
		switch err := s.Guard(a); {
		case errors.Is(err, ErrAdmit):
			return s.dryRun(a)
		case err != nil:
			return true, nil, err
		}
		return false, nil, nil
	})
}

// ErrAdmit is a Guard's answer that admits a dry run past the fake's own admission.
var ErrAdmit = errors.New("admitted")

// dryRun answers a server-side dry run without storing it: a create or an update with its object, a
// patch with the object as it is, a deletion with nothing.
func (s *Server) dryRun(a clienttesting.Action) (bool, runtime.Object, error) {
	switch act := a.(type) {
	case clienttesting.CreateActionImpl:
		return len(act.CreateOptions.DryRun) > 0, act.GetObject(), nil
	case clienttesting.UpdateActionImpl:
		return len(act.UpdateOptions.DryRun) > 0, act.GetObject(), nil
	case clienttesting.PatchActionImpl:
		if len(act.PatchOptions.DryRun) == 0 {
			return false, nil, nil
		}
		obj, err := s.Clientset.Tracker().Get(act.GetResource(), act.GetNamespace(), act.GetName())
		return true, obj, err
	case clienttesting.DeleteActionImpl:
		return len(act.DeleteOptions.DryRun) > 0, nil, nil
	}
	return false, nil, nil
}

// assignUID gives a created object a UID unless it has one, and passes it on to be created.
func (s *Server) assignUID(a clienttesting.Action) (bool, runtime.Object, error) {
	ca, ok := a.(clienttesting.CreateAction)
	if !ok {
		return false, nil, nil
	}
	if m, err := meta.Accessor(ca.GetObject()); err == nil && m.GetUID() == "" {
		m.SetUID(types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", s.uids.Add(1))))
	}
	return false, nil, nil
}

// sign is the signer: an approval is answered with a certificate at once (or a moment later).
func (s *Server) sign(a clienttesting.Action) (bool, runtime.Object, error) {
	if a.GetSubresource() != "approval" {
		return false, nil, nil
	}
	csr := a.(clienttesting.UpdateAction).GetObject().(*certv1.CertificateSigningRequest).DeepCopy()
	block, _ := pem.Decode(csr.Spec.Request)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return true, nil, err
	}
	seconds := int32(3600)
	if csr.Spec.ExpirationSeconds != nil {
		seconds = *csr.Spec.ExpirationSeconds
	}
	s.mu.Lock()
	s.approved = append(s.approved, csr.Name)
	signer, n := s.Signer, len(s.approved)
	s.mu.Unlock()
	var tmpl *x509.Certificate
	if signer != nil {
		tmpl = signer(req, seconds)
	} else {
		tmpl = &x509.Certificate{SerialNumber: big.NewInt(int64(n + 1)), Subject: req.Subject,
			NotBefore: Now.Add(-5 * time.Minute), NotAfter: Now.Add(time.Duration(seconds) * time.Second),
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
		tmpl.PublicKey = req.PublicKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.CA, tmpl.PublicKey, s.Key)
	if err != nil {
		return true, nil, err
	}
	gvr := certv1.SchemeGroupVersion.WithResource("certificatesigningrequests")
	if s.DeferSigning {
		approved := csr.DeepCopy()
		if err := s.Clientset.Tracker().Update(gvr, approved, ""); err != nil {
			return true, nil, err
		}
		signed := csr.DeepCopy()
		signed.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		s.AfterWatch("certificatesigningrequests", func() { _ = s.Clientset.Tracker().Update(gvr, signed, "") })
		return true, approved, nil
	}
	csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := s.Clientset.Tracker().Update(gvr, csr, ""); err != nil {
		return true, nil, err
	}
	return true, csr, nil
}

// terminate is the namespace controller: a deleted namespace terminates first and is gone a moment later,
// as on a real cluster, so that the code's watch for its deletion has something to see.
func (s *Server) terminate(a clienttesting.Action) (bool, runtime.Object, error) {
	gvr := corev1.SchemeGroupVersion.WithResource("namespaces")
	name := a.(clienttesting.DeleteAction).GetName()
	obj, err := s.Clientset.Tracker().Get(gvr, "", name)
	if err != nil {
		return true, nil, err
	}
	ns := obj.(*corev1.Namespace).DeepCopy()
	if ns.DeletionTimestamp == nil {
		now := metav1.NewTime(Now)
		ns.DeletionTimestamp = &now
		if err := s.Clientset.Tracker().Update(gvr, ns, ""); err != nil {
			return true, nil, err
		}
		s.AfterWatch("namespaces", func() { _ = s.Clientset.Tracker().Delete(gvr, "", name) })
	}
	return true, nil, nil
}

// review answers a SubjectAccessReview as RBAC would for what kubectl federate binds: creating pods where
// a RoleBinding of the namespace names the user, impersonating where a ClusterRoleBinding names it;
// anything else is refused. SARAllow, if set, decides instead.
func (s *Server) review(a clienttesting.Action) (bool, runtime.Object, error) {
	sar := a.(clienttesting.CreateActionImpl).GetObject().(*authzv1.SubjectAccessReview).DeepCopy()
	ra := sar.Spec.ResourceAttributes
	names := func(tr clienttesting.ObjectTracker, gvr schema.GroupVersionResource, kind, ns string) bool {
		// The trackers, not the clients: a reactor runs under the fake's lock.
		l, err := tr.List(gvr, gvr.GroupVersion().WithKind(kind), ns)
		if err != nil {
			return false
		}
		items, _ := meta.ExtractList(l)
		for _, o := range items {
			var subjects []rbacv1.Subject
			switch b := o.(type) {
			case *rbacv1.RoleBinding:
				subjects = b.Subjects
			case *unstructured.Unstructured:
				raw, _, _ := unstructured.NestedSlice(b.Object, "subjects")
				for _, r := range raw {
					m, _ := r.(map[string]any)
					name, _ := m["name"].(string)
					kind, _ := m["kind"].(string)
					ns, _ := m["namespace"].(string)
					subjects = append(subjects, rbacv1.Subject{Kind: kind, Name: name, Namespace: ns})
				}
			}
			for _, sub := range subjects {
				if userOf(sub) == sar.Spec.User {
					return true
				}
			}
		}
		return false
	}
	switch {
	case s.SARAllow != nil:
		sar.Status.Allowed = s.SARAllow(sar.Spec)
	case ra != nil && ra.Verb == "create" && ra.Resource == "pods":
		sar.Status.Allowed = names(s.Clientset.Tracker(), RoleBindings, "RoleBinding", ra.Namespace)
	case ra != nil && strings.HasPrefix(ra.Verb, "impersonate"):
		sar.Status.Allowed = names(s.DynamicClient.Tracker(), ClusterRoleBindings, "ClusterRoleBinding", "")
	}
	return true, sar, nil
}

// selfReview answers a SelfSubjectAccessReview: a fake does not know who asks, so a tenant's creating pods
// in a namespace is allowed while a RoleBinding there names anyone (revoke deletes it).
func (s *Server) selfReview(a clienttesting.Action) (bool, runtime.Object, error) {
	r := a.(clienttesting.CreateActionImpl).GetObject().(*authzv1.SelfSubjectAccessReview).DeepCopy()
	if ra := r.Spec.ResourceAttributes; ra != nil && ra.Verb == "create" && ra.Resource == "pods" {
		l, err := s.Clientset.Tracker().List(RoleBindings, RoleBindings.GroupVersion().WithKind("RoleBinding"), ra.Namespace)
		if err == nil {
			items, _ := meta.ExtractList(l)
			r.Status.Allowed = len(items) > 0
		}
	}
	return true, r, nil
}

func userOf(s rbacv1.Subject) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		return "system:serviceaccount:" + s.Namespace + ":" + s.Name
	}
	return s.Name
}

// admit is admission: in a sandbox namespace, a dry-run create is refused as the sandbox's policies and
// Pod Security refuse its probes; the cordon probe is refused where the namespace is cordoned.
func (s *Server) admit(res string) clienttesting.ReactionFunc {
	return func(a clienttesting.Action) (bool, runtime.Object, error) {
		ca := a.(clienttesting.CreateActionImpl)
		dry := len(ca.CreateOptions.DryRun) > 0
		if p, ok := ca.GetObject().(*corev1.Pod); ok && dry && p.Annotations[annotCordonProbe] != "" {
			obj, err := s.Clientset.Tracker().Get(corev1.SchemeGroupVersion.WithResource("namespaces"), "", a.GetNamespace())
			if err == nil && obj.(*corev1.Namespace).Labels[labelCordoned] == "true" {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: res}, "probe",
					errors.New("ValidatingAdmissionPolicy '"+sandboxPolicy+"-cordon' denied request"))
			}
			return true, p, nil
		}
		if !dry || s.AdmitAll {
			return dry, ca.GetObject(), nil
		}
		by := "ValidatingAdmissionPolicy '" + sandboxPolicy + "-" + res + "' denied request"
		if p, ok := ca.GetObject().(*corev1.Pod); ok && len(p.Spec.Containers) > 0 && len(p.Spec.Containers[0].Ports) > 0 {
			by = "violates PodSecurity \"restricted:latest\""
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: res}, "probe", errors.New(by))
	}
}

// apply is server-side apply: it creates what is missing and replaces what is there (keeping the other
// half: status on a spec apply, spec on a status apply); the quota controller and CRD establishment are
// instant.
//
// Every patch of a dynamic object gives it a new resourceVersion, and an apply that names one is refused
// with a Conflict unless the object is at exactly that version, as the API server does.
func (s *Server) apply(a clienttesting.Action) (bool, runtime.Object, error) {
	pa, ok := a.(clienttesting.PatchActionImpl)
	if !ok {
		return false, nil, nil
	}
	switch pa.GetPatchType() {
	case types.ApplyPatchType:
	case types.MergePatchType, types.JSONPatchType:
		return s.patch(pa)
	default:
		return false, nil, nil
	}
	tr := s.DynamicClient.Tracker()
	gvr, ns, name := pa.GetResource(), pa.GetNamespace(), pa.GetName()
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal(pa.GetPatch(), &obj.Object); err != nil {
		return true, nil, err
	}
	obj.SetName(name)
	obj.SetNamespace(ns)
	want := obj.GetResourceVersion()
	obj.SetResourceVersion(strconv.FormatInt(s.rvs.Add(1), 10))
	existing, err := tr.Get(gvr, ns, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && pa.GetSubresource() == "status":
		return true, nil, err
	case apierrors.IsNotFound(err):
		fill(gvr, obj)
		err = tr.Create(gvr, obj, ns)
	case err != nil:
		return true, nil, err
	case want != "" && want != existing.(*unstructured.Unstructured).GetResourceVersion():
		return true, nil, apierrors.NewConflict(gvr.GroupResource(), name, errors.New("the object has been modified"))
	default:
		ex := existing.(*unstructured.Unstructured).DeepCopy()
		ex.SetResourceVersion(obj.GetResourceVersion())
		if pa.GetSubresource() == "status" {
			ex.Object["status"] = obj.Object["status"]
		} else {
			if st, ok := ex.Object["status"]; ok {
				obj.Object["status"] = st
			}
			ex = obj
		}
		fill(gvr, ex)
		err = tr.Update(gvr, ex, ns)
	}
	if err != nil {
		return true, nil, err
	}
	out, err := tr.Get(gvr, ns, name, metav1.GetOptions{})
	return true, out, err
}

// patch is a merge or JSON patch of a dynamic object, which gets a new resourceVersion.
func (s *Server) patch(pa clienttesting.PatchActionImpl) (bool, runtime.Object, error) {
	tr := s.DynamicClient.Tracker()
	gvr, ns, name := pa.GetResource(), pa.GetNamespace(), pa.GetName()
	existing, err := tr.Get(gvr, ns, name, metav1.GetOptions{})
	if err != nil {
		return true, nil, err
	}
	doc, err := json.Marshal(existing)
	if err != nil {
		return true, nil, err
	}
	if pa.GetPatchType() == types.MergePatchType {
		doc, err = jsonpatch.MergePatch(doc, pa.GetPatch())
	} else {
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(pa.GetPatch()); err == nil {
			doc, err = p.Apply(doc)
		}
	}
	if err != nil {
		return true, nil, apierrors.NewInvalid(gvr.GroupVersion().WithKind("Object").GroupKind(), name, nil)
	}
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal(doc, &obj.Object); err != nil {
		return true, nil, err
	}
	obj.SetResourceVersion(strconv.FormatInt(s.rvs.Add(1), 10))
	if err := tr.Update(gvr, obj, ns); err != nil {
		return true, nil, err
	}
	return true, obj, nil
}

// fill is what controllers write at once: a quota's enforced status, a CRD's Established condition.
func fill(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	switch gvr {
	case ResourceQuotas:
		hard, _, _ := unstructured.NestedMap(u.Object, "spec", "hard")
		_ = unstructured.SetNestedMap(u.Object, hard, "status", "hard")
	case CRDs:
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Established", "status": "True"}}, "status", "conditions")
	}
}

// DeleteCollection deletes, from a fake's tracker, the objects of one kind that the action's label
// selector matches.
func DeleteCollection(tr clienttesting.ObjectTracker, gvk schema.GroupVersionKind) clienttesting.ReactionFunc {
	return func(a clienttesting.Action) (bool, runtime.Object, error) {
		dc, ok := a.(clienttesting.DeleteCollectionActionImpl)
		if !ok {
			return false, nil, nil
		}
		list, err := tr.List(a.GetResource(), gvk, a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return true, nil, err
		}
		sel := dc.GetListRestrictions().Labels
		for _, it := range items {
			m, err := meta.Accessor(it)
			if err != nil {
				return true, nil, err
			}
			if sel == nil || sel.Matches(labels.Set(m.GetLabels())) {
				if err := tr.Delete(a.GetResource(), m.GetNamespace(), m.GetName()); err != nil && !apierrors.IsNotFound(err) {
					return true, nil, err
				}
			}
		}
		return true, nil, nil
	}
}

// applyTyped is server-side apply through the typed clientset (a RoleBinding's): the applied object,
// forced by one field manager, replaces what is there or is created.
func (s *Server) applyTyped(a clienttesting.Action) (bool, runtime.Object, error) {
	pa, ok := a.(clienttesting.PatchActionImpl)
	if !ok || pa.GetPatchType() != types.ApplyPatchType {
		return false, nil, nil
	}
	gvr, ns, name := pa.GetResource(), pa.GetNamespace(), pa.GetName()
	var tm metav1.TypeMeta
	if err := json.Unmarshal(pa.GetPatch(), &tm); err != nil {
		return true, nil, err
	}
	obj, err := scheme.Scheme.New(tm.GroupVersionKind())
	if err != nil {
		return true, nil, fmt.Errorf("fakeapi: apply of %s: %w", tm.GroupVersionKind(), err)
	}
	if err := json.Unmarshal(pa.GetPatch(), obj); err != nil {
		return true, nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return true, nil, err
	}
	m.SetName(name)
	m.SetNamespace(ns)
	tr := s.Clientset.Tracker()
	old, err := tr.Get(gvr, ns, name)
	switch {
	case apierrors.IsNotFound(err):
		if m.GetUID() == "" {
			m.SetUID(types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", s.uids.Add(1))))
		}
		err = tr.Create(gvr, obj, ns)
	case err != nil:
		return true, nil, err
	default:
		if om, aerr := meta.Accessor(old); aerr == nil {
			m.SetUID(om.GetUID())
			m.SetCreationTimestamp(om.GetCreationTimestamp())
		}
		err = tr.Update(gvr, obj, ns)
	}
	if err != nil {
		return true, nil, err
	}
	out, err := tr.Get(gvr, ns, name)
	return true, out, err
}
