package handshake

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
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
	clienttesting "k8s.io/client-go/testing"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
)

// The fast tier runs the whole protocol on client-go fake clientsets. The fakes are taught the few things
// an API server does that the protocol relies on: names from generateName, a CSR signer (honest or not),
// admission that refuses the sandbox probes, server-side apply that creates, a quota controller and CRD
// establishment. Everything that touches a real cluster is still proven end to end in test/e2e.

// fakeCluster is one side, with what the test wants to look at.
type fakeCluster struct {
	*Cluster
	kube *fake.Clientset
	dyn  *dynamicfake.FakeDynamicClient
	ca   *x509.Certificate
	key  *ecdsa.PrivateKey

	mu       sync.Mutex
	approved []string // CSR names approved
	// signer overrides what the signer does with an approved CSR (nil: sign it honestly).
	signer func(csr *x509.CertificateRequest, seconds int32) *x509.Certificate
	// admitAll makes admission refuse nothing (a cluster without the policies).
	admitAll bool
	// deferSigning makes the signer answer the approval first and write the certificate a moment later.
	deferSigning bool
	watches      chan string // the resource of every watch the code under test starts
}

// afterWatch runs fn once the code under test watches resource: the fake has no history to replay, so
// an event sent before the watch starts would be lost, where a real API server would replay it.
func (f *fakeCluster) afterWatch(resource string, fn func()) {
	go func() {
		for r := range f.watches {
			if r == resource {
				fn()
				return
			}
		}
	}()
}

var listKinds = map[schema.GroupVersionResource]string{
	v1alpha1.TenantGVR:             "TenantList",
	v1alpha1.IdentityGVR:           "IdentityList",
	v1alpha1.ResourceSliceGVR:      "ResourceSliceList",
	v1alpha1.ResourceSliceClassGVR: "ResourceSliceClassList",
	v1alpha1.NamespaceRequestGVR:   "NamespaceRequestList",
	crdGVR:                         "CustomResourceDefinitionList",
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}:        "ClusterRoleList",
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}: "ClusterRoleBindingList",
	v1alpha1.ExchangeRequestGVR: "ExchangeRequestList",
	policyGVR:                   "ValidatingAdmissionPolicyList",
	policyBindingGVR:            "ValidatingAdmissionPolicyBindingList",
	resourceQuotaGVR:            "ResourceQuotaList",
	limitRangeGVR:               "LimitRangeList",
	serviceAccountGVR:           "ServiceAccountList",
	networkPolicyGVR:            "NetworkPolicyList",
	{Group: "apps", Version: "v1", Resource: "deployments"}:  "DeploymentList",
	{Group: "apps", Version: "v1", Resource: "statefulsets"}: "StatefulSetList",
	{Group: "apps", Version: "v1", Resource: "daemonsets"}:   "DaemonSetList",
	{Group: "apps", Version: "v1", Resource: "replicasets"}:  "ReplicaSetList",
	{Group: "batch", Version: "v1", Resource: "cronjobs"}:    "CronJobList",
	{Group: "batch", Version: "v1", Resource: "jobs"}:        "JobList",
	{Version: "v1", Resource: "replicationcontrollers"}:      "ReplicationControllerList",
}

var fakeNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func newFakeCluster(t *testing.T, objects ...runtime.Object) *fakeCluster {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fake-ca"}, IsCA: true,
		NotBefore: fakeNow.Add(-time.Hour), NotAfter: fakeNow.Add(10 * 365 * 24 * time.Hour), BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	kube := fake.NewClientset(objects...)
	kube.Tracker().Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "0123456789abcdef"}}) //nolint:errcheck // a fresh tracker
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	f := &fakeCluster{kube: kube, dyn: dyn, ca: ca, key: key}
	f.Cluster = &Cluster{Kube: kube, Dynamic: dyn, Report: Discard, Now: func() time.Time { return fakeNow }}
	f.teach(t)
	return f
}

func (f *fakeCluster) teach(t *testing.T) {
	serial := 0
	f.watches = make(chan string, 100)
	f.kube.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		w, err := f.kube.Tracker().Watch(a.GetResource(), a.GetNamespace(), a.(clienttesting.WatchActionImpl).ListOptions)
		select { // only once the watcher is registered
		case f.watches <- a.GetResource().Resource:
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
	f.kube.PrependReactor("create", "certificatesigningrequests", func(a clienttesting.Action) (bool, runtime.Object, error) {
		csr := a.(clienttesting.CreateAction).GetObject().(*certv1.CertificateSigningRequest)
		if csr.Name == "" && csr.GenerateName != "" {
			serial++
			csr.Name = csr.GenerateName + strings.Repeat("x", 4) + string(rune('a'+serial%26))
			csr.Spec.Username = "operator"
		}
		return false, nil, nil
	})
	// The signer: an approval is answered with a certificate at once.
	f.kube.PrependReactor("update", "certificatesigningrequests", func(a clienttesting.Action) (bool, runtime.Object, error) {
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
		f.mu.Lock()
		f.approved = append(f.approved, csr.Name)
		signer := f.signer
		f.mu.Unlock()
		var tmpl *x509.Certificate
		if signer != nil {
			tmpl = signer(req, seconds)
		} else {
			tmpl = &x509.Certificate{SerialNumber: big.NewInt(int64(len(f.approved) + 1)), Subject: req.Subject,
				NotBefore: fakeNow.Add(-5 * time.Minute), NotAfter: fakeNow.Add(time.Duration(seconds) * time.Second),
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
			tmpl.PublicKey = req.PublicKey
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, f.ca, tmpl.PublicKey, f.key)
		if err != nil {
			return true, nil, err
		}
		gvr := certv1.SchemeGroupVersion.WithResource("certificatesigningrequests")
		if f.deferSigning {
			approved := csr.DeepCopy()
			if err := f.kube.Tracker().Update(gvr, approved, ""); err != nil {
				return true, nil, err
			}
			signed := csr.DeepCopy()
			signed.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
			f.afterWatch("certificatesigningrequests", func() { _ = f.kube.Tracker().Update(gvr, signed, "") })
			return true, approved, nil
		}
		csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		if err := f.kube.Tracker().Update(gvr, csr, ""); err != nil {
			return true, nil, err
		}
		return true, csr, nil
	})
	// DeleteCollection honours its label selector, as the API server does (the fake ignores it otherwise).
	f.kube.PrependReactor("delete-collection", "secrets", deleteCollection(f.kube.Tracker(), corev1.SchemeGroupVersion.WithKind("Secret")))
	for gvr, list := range listKinds {
		f.dyn.PrependReactor("delete-collection", gvr.Resource, deleteCollection(f.dyn.Tracker(), gvr.GroupVersion().WithKind(strings.TrimSuffix(list, "List"))))
	}
	// The namespace controller: a deleted namespace terminates first and is gone a moment later, as on a
	// real cluster, so that the code's watch for its deletion has something to see.
	f.kube.PrependReactor("delete", "namespaces", func(a clienttesting.Action) (bool, runtime.Object, error) {
		gvr := corev1.SchemeGroupVersion.WithResource("namespaces")
		name := a.(clienttesting.DeleteAction).GetName()
		obj, err := f.kube.Tracker().Get(gvr, "", name)
		if err != nil {
			return true, nil, err
		}
		ns := obj.(*corev1.Namespace).DeepCopy()
		if ns.DeletionTimestamp == nil {
			now := metav1.NewTime(fakeNow)
			ns.DeletionTimestamp = &now
			if err := f.kube.Tracker().Update(gvr, ns, ""); err != nil {
				return true, nil, err
			}
			f.afterWatch("namespaces", func() { _ = f.kube.Tracker().Delete(gvr, "", name) })
		}
		return true, nil, nil
	})
	// Admission: the sandbox's dry-run probes are refused as the policies and Pod Security refuse them.
	for _, res := range []string{"pods", "services", "secrets"} {
		f.kube.PrependReactor("create", res, func(a clienttesting.Action) (bool, runtime.Object, error) {
			ca := a.(clienttesting.CreateActionImpl)
			if len(ca.CreateOptions.DryRun) == 0 || f.admitAll {
				return len(ca.CreateOptions.DryRun) > 0, ca.GetObject(), nil
			}
			by := "ValidatingAdmissionPolicy '" + SandboxName + "-" + res + "' denied request"
			if p, ok := ca.GetObject().(*corev1.Pod); ok && len(p.Spec.Containers) > 0 && len(p.Spec.Containers[0].Ports) > 0 {
				by = "violates PodSecurity \"restricted:latest\""
			}
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: res}, "probe", errors.New(by))
		})
	}
	// Server-side apply creates what is missing and replaces what is there (keeping the other half:
	// status on a spec apply, spec on a status apply); the quota controller and CRD establishment are
	// instant.
	f.dyn.PrependReactor("patch", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pa, ok := a.(clienttesting.PatchActionImpl)
		if !ok || pa.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		tr := f.dyn.Tracker()
		gvr, ns, name := pa.GetResource(), pa.GetNamespace(), pa.GetName()
		obj := &unstructured.Unstructured{}
		if err := json.Unmarshal(pa.GetPatch(), &obj.Object); err != nil {
			return true, nil, err
		}
		obj.SetName(name)
		obj.SetNamespace(ns)
		existing, err := tr.Get(gvr, ns, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && pa.GetSubresource() == "status":
			return true, nil, err
		case apierrors.IsNotFound(err):
			fill(gvr, obj)
			err = tr.Create(gvr, obj, ns)
		case err != nil:
			return true, nil, err
		default:
			ex := existing.(*unstructured.Unstructured).DeepCopy()
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
	})
	_ = t
}

func fill(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	switch gvr {
	case resourceQuotaGVR:
		hard, _, _ := unstructured.NestedMap(u.Object, "spec", "hard")
		_ = unstructured.SetNestedMap(u.Object, hard, "status", "hard")
	case crdGVR:
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Established", "status": "True"}}, "status", "conditions")
	}
}

// pair is a consumer and a provider, initialized with the IDs "consumer" and "provider".
func fakePair(t *testing.T) (consumer, provider *fakeCluster) {
	t.Helper()
	consumer, provider = newFakeCluster(t), newFakeCluster(t)
	if _, err := consumer.Init(t.Context(), "consumer"); err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Init(t.Context(), "provider"); err != nil {
		t.Fatal(err)
	}
	return consumer, provider
}

// issueOptions are a provider's usual choices (the CA is any real certificate).
func issueOptions(tenant *v1alpha1.Tenant) IssueOptions {
	return IssueOptions{ConsumerID: "consumer", Tenant: tenant, APIServer: "https://provider.example:6443",
		CA: testCAPEM, Expiration: time.Hour}
}

var testCAPEM = func() []byte {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "provider-ca"}, IsCA: true,
		NotBefore: fakeNow, NotAfter: fakeNow.Add(time.Hour), BasicConstraintsValid: true}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}()

// actions lists "verb resource[/sub]" of the fake's recorded actions, in order.
func (f *fakeCluster) actions() []string {
	var out []string
	for _, a := range f.kube.Actions() {
		s := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			s += "/" + a.GetSubresource()
		}
		out = append(out, s)
	}
	return out
}

func (f *fakeCluster) count(verb, resource string) int {
	n := 0
	for _, a := range f.actions() {
		if a == verb+" "+resource {
			n++
		}
	}
	return n
}

func (f *fakeCluster) tenant(t *testing.T) *v1alpha1.Tenant {
	t.Helper()
	u, err := f.dyn.Resource(v1alpha1.TenantGVR).Namespace(TenantNamespace("consumer")).Get(t.Context(), "consumer", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Tenant: %v", err)
	}
	var tn v1alpha1.Tenant
	if err := fromUnstructured(u, &tn); err != nil {
		t.Fatal(err)
	}
	return &tn
}

// deleteCollection deletes, from a fake's tracker, the objects of one kind that the action's label
// selector matches.
func deleteCollection(tr clienttesting.ObjectTracker, gvk schema.GroupVersionKind) clienttesting.ReactionFunc {
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
