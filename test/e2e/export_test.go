//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/views"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

var targetsGVR = schema.GroupVersionResource{Group: "multicluster.admiralty.io", Version: "v1alpha1", Resource: "targets"}

// exportFormat is one format of export: where it goes, and how its tool turns what was written into a
// connection to the provider (each as the tool's own source does, docs/integrations.md).
type exportFormat struct {
	format, ns string
	extra      []string
	read       func(t *testing.T, k kubernetes.Interface) *rest.Config
}

var exportFormats = []exportFormat{
	{format: "kubeconfig", ns: "flux-system", extra: []string{"--key", "value"}, read: func(t *testing.T, k kubernetes.Interface) *rest.Config {
		s := exportedSecret(t, k, "flux-system", "provider-kubeconfig")
		// Flux and Cluster API read the kubeconfig under "value"; it is the one under "kubeconfig" too.
		if string(s.Data["value"]) != string(s.Data["kubeconfig"]) {
			t.Errorf("the kubeconfig export's keys differ")
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data["value"])
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}},
	{format: "argocd", ns: "argocd", read: func(t *testing.T, k kubernetes.Interface) *rest.Config {
		// Argo CD: util/db/cluster.go SecretToCluster, then the Cluster's RESTConfig from its ClusterConfig.
		s := exportedSecret(t, k, "argocd", "provider")
		if s.Labels["argocd.argoproj.io/secret-type"] != "cluster" || string(s.Data["name"]) != "provider" || string(s.Data["namespaces"]) != tenantNS {
			t.Errorf("argocd Secret: %v %q %q", s.Labels, s.Data["name"], s.Data["namespaces"])
		}
		var c struct {
			BearerToken     string `json:"bearerToken"`
			TLSClientConfig struct {
				Insecure                  bool
				CertData, KeyData, CAData []byte
			} `json:"tlsClientConfig"`
		}
		if err := json.Unmarshal(s.Data["config"], &c); err != nil {
			t.Fatal(err)
		}
		return &rest.Config{Host: strings.TrimRight(string(s.Data["server"]), "/"), BearerToken: c.BearerToken, TLSClientConfig: rest.TLSClientConfig{
			Insecure: c.TLSClientConfig.Insecure, CertData: c.TLSClientConfig.CertData, KeyData: c.TLSClientConfig.KeyData, CAData: c.TLSClientConfig.CAData}}
	}},
	{format: "cluster-gateway", ns: "vela-system", read: func(t *testing.T, k kubernetes.Interface) *rest.Config {
		// cluster-gateway: clustergateway_types_secret.go convert, then transport.go's rest config.
		s := exportedSecret(t, k, "vela-system", "provider")
		cfg := &rest.Config{Host: string(s.Data["endpoint"]), TLSClientConfig: rest.TLSClientConfig{CAData: s.Data["ca.crt"]}}
		switch s.Labels["cluster.core.oam.dev/cluster-credential-type"] {
		case "X509Certificate":
			cfg.CertData, cfg.KeyData = s.Data["tls.crt"], s.Data["tls.key"]
		case "ServiceAccountToken":
			cfg.BearerToken = string(s.Data["token"])
		default:
			t.Fatalf("cluster-gateway credential type: %v", s.Labels)
		}
		return cfg
	}},
	{format: "admiralty", ns: "jobs", read: func(t *testing.T, k kubernetes.Interface) *rest.Config {
		// Admiralty: pkg/config/agent/agent.go addTarget / getConfigFromKubeconfigSecretOrDie.
		tg, err := dyn(t, consumer).Resource(targetsGVR).Namespace("jobs").Get(t.Context(), "provider", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		name, _, _ := unstructured.NestedString(tg.Object, "spec", "kubeconfigSecret", "name")
		key, _, _ := unstructured.NestedString(tg.Object, "spec", "kubeconfigSecret", "key")
		if key == "" {
			key = "config"
		}
		s := exportedSecret(t, k, "jobs", name)
		raw, err := clientcmd.Load(s.Data[key])
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}},
}

func exportedSecret(t *testing.T, k kubernetes.Interface, ns, name string) *corev1.Secret {
	t.Helper()
	s, err := k.CoreV1().Secrets(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("export Secret %s/%s: %v", ns, name, err)
	}
	if s.Labels[member.LabelRemoteClusterID] != "provider" || s.Labels[member.LabelRole] != member.RoleConsumer || s.Labels["federate.dev/export-format"] == "" {
		t.Errorf("export Secret %s/%s is not labelled with the pairing: %v", ns, name, s.Labels)
	}
	return s
}

// works proves a connection built from an export: it lists pods in the identity's namespace on the
// provider, and is refused outside it.
func works(t *testing.T, what string, cfg *rest.Config, ns string) {
	t.Helper()
	k := kubernetes.NewForConfigOrDie(cfg)
	if _, err := k.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Errorf("%s: listing pods in %s: %v", what, ns, err)
	}
	if _, err := k.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("%s: listing pods in default: %v, want Forbidden", what, err)
	}
}

// oldRefused proves an old connection no longer works in the identity's namespace.
func oldRefused(t *testing.T, what string, cfg *rest.Config, ns string) {
	t.Helper()
	_, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
		t.Errorf("%s: the old credential after renew: %v, want Forbidden", what, err)
	}
}

// export writes the pairing's credential in each tool's format; each tool's way of reading it reaches the
// provider in the identity's namespace only; renew rewrites each in place with the new credential while
// the old one is refused; unauthenticate deletes them. A slice's export follows the slice the same way.
func TestExport(t *testing.T) {
	defer unauthenticate(t)
	authenticate(t)
	ctx := t.Context()
	k := kubernetes.NewForConfigOrDie(consumer.Config)
	for _, ns := range []string{"flux-system", "argocd", "vela-system", "jobs"} {
		if _, err := k.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		defer func() { _ = k.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}) }()
	}
	exportCmd := func(f exportFormat, extra ...string) []string {
		return append(append([]string{"export", f.format, "--remote-cluster-id", "provider", "-n", f.ns}, f.extra...), extra...)
	}

	// Admiralty is not installed: said, with the missing API, and nothing is written; -o yaml still prints.
	adm := exportFormats[3]
	if r := on(t, consumer, exportCmd(adm)...); r.code != 1 || !strings.Contains(r.stderr, "serves no Target API (targets.multicluster.admiralty.io/v1alpha1)") {
		t.Errorf("export admiralty without Admiralty: %s", r)
	}
	if l, _ := k.CoreV1().Secrets("jobs").List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("a refused admiralty export wrote %d Secret(s)", len(l.Items))
	}
	if r := mustOn(t, consumer, exportCmd(adm, "-o", "yaml")...); !strings.Contains(r.stdout, "kind: Target") || !strings.Contains(r.stdout, "kind: Secret") {
		t.Errorf("export admiralty -o yaml: %s", r)
	}
	if l, _ := k.CoreV1().Secrets("jobs").List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("-o yaml wrote %d Secret(s)", len(l.Items))
	}
	// A stand-in for Admiralty's CRD (only the test installs it: export never installs another tool's API).
	installTargetCRD(t)

	// A Secret of that name someone else made is never taken over.
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: "argocd"}, StringData: map[string]string{"mine": "yes"}}
	if _, err := k.CoreV1().Secrets("argocd").Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := on(t, consumer, exportCmd(exportFormats[1])...); r.code != 1 || !strings.Contains(r.stderr, "Secret argocd/provider exists and was not written by an export: refusing to replace it") {
		t.Errorf("export over a Secret it did not make: %s", r)
	}
	if s, err := k.CoreV1().Secrets("argocd").Get(ctx, "provider", metav1.GetOptions{}); err != nil || string(s.Data["mine"]) != "yes" || len(s.Data) != 1 {
		t.Errorf("the refused export changed someone's Secret: %v %v", s, err)
	}
	if err := k.CoreV1().Secrets("argocd").Delete(ctx, "provider", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	old := map[string]*rest.Config{}
	for _, f := range exportFormats {
		if r := mustOn(t, consumer, exportCmd(f)...); !strings.Contains(r.stdout, " created (namespace "+f.ns+")") {
			t.Errorf("export %s: %s", f.format, r)
		}
		if r := mustOn(t, consumer, exportCmd(f)...); !strings.Contains(r.stdout, " unchanged (namespace "+f.ns+")") || strings.Contains(r.stdout, "created") {
			t.Errorf("export %s again: %s", f.format, r)
		}
		old[f.format] = f.read(t, k)
		works(t, f.format, old[f.format], tenantNS)
	}
	r := mustOn(t, consumer, "status", "-o", "json")
	if exports := itemsOfKind[handshake.ExportState](t, r.stdout, func(kind string) bool { return kind == views.KindExport }); len(exports) != len(exportFormats) {
		t.Errorf("status -o json lists %d export(s), want %d:\n%s", len(exports), len(exportFormats), r.stdout)
	}

	// A lookalike: someone who may write Secrets in a namespace of theirs copies an export's labels,
	// annotations and data. Labels prove nothing: a renewal never writes the new credential into it, and
	// unauthenticate leaves it (see pkg/handshake/exportrecord.go).
	if _, err := k.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "evil"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = k.CoreV1().Namespaces().Delete(t.Context(), "evil", metav1.DeleteOptions{}) }()
	argo := exportedSecret(t, k, "argocd", "provider")
	lookalike, err := k.CoreV1().Secrets("evil").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: "evil",
		Labels: argo.Labels, Annotations: argo.Annotations}, Data: argo.Data}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Gone before this test ends: it carries the pairing's labels, and a namespace is deleted in the
	// background, while later tests look for what the pairing left.
	defer func() { _ = k.CoreV1().Secrets("evil").Delete(t.Context(), "provider", metav1.DeleteOptions{}) }()
	lookalikeUntouched := func(when string) {
		t.Helper()
		if s, err := k.CoreV1().Secrets("evil").Get(ctx, "provider", metav1.GetOptions{}); err != nil || s.ResourceVersion != lookalike.ResourceVersion {
			t.Errorf("%s: the lookalike export was written or deleted: %v", when, err)
		}
	}
	r = mustOn(t, consumer, "status", "-o", "json")
	if exports := itemsOfKind[handshake.ExportState](t, r.stdout, func(kind string) bool { return kind == views.KindExport }); len(exports) != len(exportFormats) {
		t.Errorf("status -o json lists %d export(s) beside a lookalike, want %d:\n%s", len(exports), len(exportFormats), r.stdout)
	}

	// A slice's export carries the slice's credential, in the slice's namespace.
	mustRun(t, "", "create", "resourceslice", "exp-s1", "--cpu", "1", "--memory", "1Gi", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
	sliceNS := member.SliceNamespace("consumer", "exp-s1")
	mustOn(t, consumer, "export", "kubeconfig", "--remote-cluster-id", "provider", "--resource-slice", "exp-s1", "-n", "flux-system")
	sliceCfg := func() *rest.Config {
		s := exportedSecret(t, k, "flux-system", "provider-exp-s1-kubeconfig")
		cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data["kubeconfig"])
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	oldSlice := sliceCfg()
	works(t, "the slice's export", oldSlice, sliceNS)

	mustRun(t, "", "renew", "--overlap", "0", "--remote-cluster-id", "provider", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
	for _, f := range exportFormats {
		cur := f.read(t, k)
		if string(cur.CertData) == string(old[f.format].CertData) {
			t.Errorf("%s: renew left the old certificate in the export", f.format)
			continue
		}
		works(t, f.format+" after renew", cur, tenantNS)
		oldRefused(t, f.format, old[f.format], tenantNS)
	}
	if cur := sliceCfg(); string(cur.CertData) == string(oldSlice.CertData) {
		t.Error("renew left the slice's old certificate in its export")
	} else {
		works(t, "the slice's export after renew", cur, sliceNS)
		oldRefused(t, "the slice's export", oldSlice, sliceNS)
	}
	lookalikeUntouched("after renew")
	mustRun(t, "", "delete", "resourceslice", "exp-s1", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
	if _, err := k.CoreV1().Secrets("flux-system").Get(ctx, "provider-exp-s1-kubeconfig", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the slice's export after delete resourceslice: %v", err)
	}

	unauthenticate(t)
	for _, f := range exportFormats {
		if l, err := k.CoreV1().Secrets(f.ns).List(ctx, metav1.ListOptions{LabelSelector: "federate.dev/export-format"}); err != nil || len(l.Items) != 0 {
			t.Errorf("%s: export Secrets after unauthenticate: %d %v", f.format, len(l.Items), err)
		}
	}
	lookalikeUntouched("after unauthenticate")
	if _, err := dyn(t, consumer).Resource(targetsGVR).Namespace("jobs").Get(ctx, "provider", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Target after unauthenticate: %v", err)
	}

	// A token pairing: each format carries the token (Argo CD's bearerToken, cluster-gateway's
	// ServiceAccountToken), and renew replaces it.
	authenticate(t, "--credential", "token")
	old = map[string]*rest.Config{}
	for _, f := range exportFormats {
		mustOn(t, consumer, exportCmd(f)...)
		old[f.format] = f.read(t, k)
		if old[f.format].BearerToken == "" || len(old[f.format].CertData) != 0 {
			t.Errorf("%s export of a token pairing holds no token, or a certificate", f.format)
		}
		works(t, f.format+" (token)", old[f.format], tenantNS)
	}
	mustRun(t, "", "renew", "--overlap", "0", "--remote-cluster-id", "provider", "--kubeconfig", consumer.Kubeconfig, "--remote-kubeconfig", provider.Kubeconfig)
	for _, f := range exportFormats {
		cur := f.read(t, k)
		if cur.BearerToken == old[f.format].BearerToken {
			t.Errorf("%s: renew left the old token in the export", f.format)
			continue
		}
		works(t, f.format+" (token) after renew", cur, tenantNS)
		oldRefused(t, f.format+" (token)", old[f.format], tenantNS)
	}
	unauthenticate(t)
	for _, f := range exportFormats {
		if l, err := k.CoreV1().Secrets(f.ns).List(ctx, metav1.ListOptions{LabelSelector: "federate.dev/export-format"}); err != nil || len(l.Items) != 0 {
			t.Errorf("%s (token): export Secrets after unauthenticate: %d %v", f.format, len(l.Items), err)
		}
	}
}

// installTargetCRD installs a minimal CRD serving Admiralty's Target, removed when the test ends.
func installTargetCRD(t *testing.T) {
	t.Helper()
	crds := dyn(t, consumer).Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "targets.multicluster.admiralty.io"},
		"spec": map[string]any{
			"group": "multicluster.admiralty.io", "scope": "Namespaced",
			"names": map[string]any{"kind": "Target", "listKind": "TargetList", "plural": "targets", "singular": "target"},
			"versions": []any{map[string]any{"name": "v1alpha1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	// An earlier test's CRD still being deleted (its Targets finalized) is waited for: created over, it
	// would vanish under this test.
	if cur, err := crds.Get(t.Context(), "targets.multicluster.admiralty.io", metav1.GetOptions{}); err == nil && cur.GetDeletionTimestamp() != nil {
		w, err := crds.Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=targets.multicluster.admiralty.io", ResourceVersion: cur.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				break
			}
		}
		w.Stop()
	}
	if _, err := crds.Create(t.Context(), crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = crds.Delete(context.Background(), "targets.multicluster.admiralty.io", metav1.DeleteOptions{})
	})
	// Served once Established: watched.
	w, err := crds.Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=targets.multicluster.admiralty.io"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
				return
			}
		}
	}
	t.Fatal("the Target CRD was never established")
}

// delete export removes one export, found by its record: its Target first, then its Secret, then the
// record; a dry run changes nothing; a Secret deleted by hand leaves a record (and a Target) that status
// lists as SecretGone and delete export removes; a second run is NotFound (exit 1, --ignore-not-found: 0).
// The pairing, its credential and its other exports stay.
func TestExportDelete(t *testing.T) {
	defer unauthenticate(t)
	authenticate(t)
	ctx := t.Context()
	k := kubernetes.NewForConfigOrDie(consumer.Config)
	for _, ns := range []string{"argocd-d", "jobs-d"} {
		if _, err := k.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		defer func() { _ = k.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}) }()
	}
	installTargetCRD(t)
	records := func() int {
		t.Helper()
		l, err := k.CoreV1().Secrets("federate-system").List(ctx, metav1.ListOptions{LabelSelector: handshake.LabelExportRecordOf})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	exportStates := func() []handshake.ExportState {
		t.Helper()
		r := mustOn(t, consumer, "status", "-o", "json")
		return itemsOfKind[handshake.ExportState](t, r.stdout, func(kind string) bool { return kind == views.KindExport })
	}
	argocd := []string{"export", "argocd", "--remote-cluster-id", "provider", "-n", "argocd-d"}
	admiralty := []string{"export", "admiralty", "--remote-cluster-id", "provider", "-n", "jobs-d"}
	mustOn(t, consumer, argocd...)
	mustOn(t, consumer, admiralty...)
	if n := records(); n != 2 {
		t.Fatalf("%d export records, want 2", n)
	}

	// A dry run names what would go, and nothing goes.
	if r := mustOn(t, consumer, append([]string{"delete"}, append(argocd, "--dry-run")...)...); !strings.Contains(r.stdout, "would delete secret/provider in argocd-d") ||
		!strings.Contains(r.stdout, "would delete secret/export-") {
		t.Errorf("delete export --dry-run: %s", r)
	}
	exportedSecret(t, k, "argocd-d", "provider")
	if n := records(); n != 2 {
		t.Errorf("a dry run left %d export records, want 2", n)
	}

	// The export goes, Secret and record; the other export stays, and the pairing works.
	if r := mustOn(t, consumer, append([]string{"delete"}, argocd...)...); r.stdout != "secret/provider deleted (namespace argocd-d)\n" {
		t.Errorf("delete export argocd: %s", r)
	}
	if _, err := k.CoreV1().Secrets("argocd-d").Get(ctx, "provider", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the argocd export's Secret after delete export: %v", err)
	}
	if n := records(); n != 1 {
		t.Errorf("%d export records after delete export, want 1 (the admiralty export's)", n)
	}
	exportedSecret(t, k, "jobs-d", "provider-kubeconfig")
	mustOn(t, consumer, "get", "kubeconfig", "--remote-cluster-id", "provider")

	// Again: NotFound, exit 1, naming the exports left; --ignore-not-found: exit 0, nothing printed.
	if r := on(t, consumer, append([]string{"delete"}, argocd...)...); r.code != 1 ||
		!strings.Contains(r.stderr, `export "argocd-d/provider" not found for the pairing with provider "provider"`) || !strings.Contains(r.stderr, "jobs-d/provider-kubeconfig") {
		t.Errorf("delete export argocd again: %s", r)
	}
	if r := mustOn(t, consumer, append([]string{"delete"}, append(argocd, "--ignore-not-found")...)...); r.stdout != "" {
		t.Errorf("delete export --ignore-not-found: %s", r)
	}

	// The admiralty export's Secret deleted by hand: its record and Target remain, status says so, and
	// delete export removes them.
	if err := k.CoreV1().Secrets("jobs-d").Delete(ctx, "provider-kubeconfig", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := handshake.ExportState{RemoteClusterID: "provider", Format: "admiralty", Namespace: "jobs-d", Secret: "provider-kubeconfig", State: handshake.ExportSecretGone}
	if got := exportStates(); len(got) != 1 || got[0] != want {
		t.Errorf("status lists the exports %+v, want only %+v", got, want)
	}
	r := mustOn(t, consumer, append([]string{"delete"}, admiralty...)...)
	if r.stdout != "target.multicluster.admiralty.io/provider deleted (namespace jobs-d)\nsecret/provider-kubeconfig was gone already (namespace jobs-d): its export record deleted\n" {
		t.Errorf("delete export admiralty, its Secret deleted by hand: %s", r)
	}
	if _, err := dyn(t, consumer).Resource(targetsGVR).Namespace("jobs-d").Get(ctx, "provider", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Target after delete export: %v", err)
	}
	if n, got := records(), exportStates(); n != 0 || len(got) != 0 {
		t.Errorf("after delete export: %d records, status lists %+v", n, got)
	}
}
