package handshake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/federate-dev/kubectl-federate/pkg/export"
)

// ExportOptions name one export: the credential (a pairing's, or one of its resource slices'), the format,
// and where it goes on this (the consumer) cluster.
type ExportOptions struct {
	Format     string
	ProviderID string
	Slice      string // "" for the pairing's identity
	Namespace  string
	Name       string // "" for the default: the provider's ID, or PROVIDER-SLICE
	Key        string // FormatKubeconfig: a second data key
}

// DefaultExportName is the name an export gets when none is given: the provider's ID, which is how the
// consumer knows the cluster, with the slice's name for a slice.
func DefaultExportName(providerID, slice string) string {
	if slice == "" {
		return providerID
	}
	return providerID + "-" + slice
}

// ErrTargetNotServed says that this cluster serves no Admiralty Target API: Admiralty is not installed.
var ErrTargetNotServed = errors.New("this cluster serves no " + export.TargetKind + " API (" + export.TargetGVR.Resource + "." +
	export.TargetGVR.GroupVersion().String() + "): Admiralty is not installed here; install it first, or print the objects instead and apply them where it is")

// NamespaceNotFoundError says that the namespace an export goes to does not exist: it is not created,
// since a tool's namespace is the tool's to make.
type NamespaceNotFoundError struct{ Namespace string }

func (e *NamespaceNotFoundError) Error() string {
	return fmt.Sprintf("namespace %q not found on this cluster (an export never creates a tool's namespace); nothing was written", e.Namespace)
}

// ExportedObject is one object an export wrote.
type ExportedObject struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Action is "created", "updated" or "unchanged".
	Action string `json:"action"`
}

// ExportState is one export, as status lists it.
type ExportState struct {
	RemoteClusterID string `json:"remoteClusterID"`
	ResourceSlice   string `json:"resourceSlice,omitempty"`
	Format          string `json:"format"`
	Namespace       string `json:"namespace"`
	Name            string `json:"name"` // the cluster's name in the tool
	Secret          string `json:"secret"`
}

func exportLabels(providerID, slice string) map[string]string {
	if slice == "" {
		l := IdentityLabels(providerID)
		l[export.LabelOf] = export.OfPairing
		return l
	}
	l := SliceLabels(providerID, slice)
	l[export.LabelOf] = export.OfResourceSlice
	return l
}

func (o ExportOptions) name() string {
	if o.Name != "" {
		return o.Name
	}
	return DefaultExportName(o.ProviderID, o.Slice)
}

// BuildExport reads the credential and builds the export's objects, and writes nothing: the objects a
// dry run or a printed export shows are exactly those Export writes.
func (c *Cluster) BuildExport(ctx context.Context, o ExportOptions) (*export.Objects, error) {
	var kc []byte
	var err error
	if o.Slice == "" {
		kc, err = c.GetKubeconfig(ctx, o.ProviderID)
	} else {
		kc, err = c.GetSliceKubeconfig(ctx, o.ProviderID, o.Slice)
	}
	if err != nil {
		return nil, err
	}
	return export.Build(export.Spec{Format: o.Format, Name: o.name(), Namespace: o.Namespace, Key: o.Key,
		Labels: exportLabels(o.ProviderID, o.Slice), Kubeconfig: kc})
}

// Export writes a credential this cluster holds in a tool's format, in a namespace that must exist. It
// never takes over an object it did not make: a Secret or Target of that name that is not this export's
// (no export labels, or another credential's or format's) is refused before anything is written. Running
// it again changes nothing, or brings the objects up to date.
func (c *Cluster) Export(ctx context.Context, o ExportOptions) ([]ExportedObject, error) {
	objs, err := c.BuildExport(ctx, o)
	if err != nil {
		return nil, err
	}
	if _, err := c.Kube.CoreV1().Namespaces().Get(ctx, o.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return nil, &NamespaceNotFoundError{Namespace: o.Namespace}
	} else if err != nil {
		return nil, err
	}
	if objs.Target != nil {
		if err := c.targetServed(); err != nil {
			return nil, err
		}
	}
	secrets := c.Kube.CoreV1().Secrets(o.Namespace)
	existing, err := secrets.Get(ctx, objs.Secret.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		existing = nil
	} else if err != nil {
		return nil, err
	}
	rec, err := c.getExportRecord(ctx, o.Namespace, objs.Secret.Name)
	if err != nil {
		return nil, err
	}
	if existing != nil {
		if err := sameExport("Secret", o.Namespace, objs.Secret.Name, existing, objs.Secret.Labels, rec, rec.uid(false)); err != nil {
			return nil, err
		}
	}
	var target *unstructured.Unstructured
	targets := c.Dynamic.Resource(export.TargetGVR).Namespace(o.Namespace)
	targetName := ""
	if objs.Target != nil {
		targetName = objs.Target.GetName()
		target, err = targets.Get(ctx, targetName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			target = nil
		} else if err != nil {
			return nil, err
		}
		if target != nil {
			if err := sameExport(export.TargetKind, o.Namespace, targetName, target, objs.Target.GetLabels(), rec, rec.uid(true)); err != nil {
				return nil, err
			}
		}
	}
	// The record first, pending: a user who may not record writes no credential (see exportrecord.go).
	// A record of another credential that got this far names objects that are gone: it starts afresh.
	if rec == nil || rec.providerID != o.ProviderID || rec.slice != o.Slice || rec.targetName != targetName {
		var keepSecret, keepTarget types.UID
		if rec != nil && rec.providerID == o.ProviderID && rec.slice == o.Slice {
			keepSecret, keepTarget = rec.uid(false), rec.uid(true)
		}
		if rec, err = c.recordExport(ctx, rec, o.ProviderID, o.Slice, o.Namespace, objs.Secret.Name, targetName, keepSecret, keepTarget); err != nil {
			return nil, err
		}
	}
	var out []ExportedObject
	written, action, err := c.writeExportSecret(ctx, existing, objs.Secret)
	if err != nil {
		return nil, err
	}
	out = append(out, ExportedObject{Kind: "Secret", Namespace: o.Namespace, Name: objs.Secret.Name, Action: action})
	var targetUID types.UID
	if objs.Target != nil {
		action := "created"
		var t *unstructured.Unstructured
		switch {
		case target == nil:
			t, err = targets.Create(ctx, objs.Target, metav1.CreateOptions{FieldManager: FieldManager})
		case equalSpec(target, objs.Target):
			t, action = target, "unchanged"
		default:
			objs.Target.SetResourceVersion(target.GetResourceVersion())
			t, err = targets.Update(ctx, objs.Target, metav1.UpdateOptions{FieldManager: FieldManager})
			action = "updated"
		}
		if err != nil {
			return out, c.undoExport(ctx, existing, written, nil, err)
		}
		targetUID = t.GetUID()
		out = append(out, ExportedObject{Kind: export.TargetKind, Namespace: o.Namespace, Name: targetName, Action: action})
		if target == nil {
			target = t
		} else {
			target = nil // not created here: never undone
		}
	}
	if _, err := c.recordExport(ctx, rec, o.ProviderID, o.Slice, o.Namespace, objs.Secret.Name, targetName, written.UID, targetUID); err != nil {
		return out, c.undoExport(ctx, existing, written, target, err)
	}
	return out, nil
}

// undoExport deletes what a failed export created (an unrecorded export would be a stranger to every
// later run, left behind): the Secret, if it did not exist before, and the Target it created. An
// existing export that was updated stays, as it was recorded before.
func (c *Cluster) undoExport(ctx context.Context, existing, written *corev1.Secret, created *unstructured.Unstructured, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout) // the export failed, perhaps on ctx
	defer cancel()
	errs := []error{cause}
	if existing == nil && written != nil {
		uid := written.UID
		errs = append(errs, ignoreNotFound(c.Kube.CoreV1().Secrets(written.Namespace).Delete(ctx, written.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})))
	}
	if created != nil {
		uid := created.GetUID()
		errs = append(errs, ignoreNotFound(c.Dynamic.Resource(export.TargetGVR).Namespace(created.GetNamespace()).Delete(ctx, created.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})))
	}
	return errors.Join(errs...)
}

func equalSpec(a, b *unstructured.Unstructured) bool {
	as, _, _ := unstructured.NestedMap(a.Object, "spec")
	bs, _, _ := unstructured.NestedMap(b.Object, "spec")
	return fmt.Sprint(as) == fmt.Sprint(bs) && maps.Equal(a.GetLabels(), b.GetLabels())
}

// writeExportSecret creates sec, or replaces the existing export's data and our labels, keeping what
// others added to it (an Argo CD user's labels for ApplicationSets, say).
func (c *Cluster) writeExportSecret(ctx context.Context, existing, sec *corev1.Secret) (*corev1.Secret, string, error) {
	secrets := c.Kube.CoreV1().Secrets(sec.Namespace)
	if existing == nil {
		w, err := secrets.Create(ctx, sec, metav1.CreateOptions{FieldManager: FieldManager})
		return w, "created", err
	}
	next := existing.DeepCopy()
	if next.Labels == nil {
		next.Labels = map[string]string{}
	}
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	maps.Copy(next.Labels, sec.Labels)
	maps.Copy(next.Annotations, sec.Annotations)
	next.Data, next.StringData = sec.Data, nil
	if maps.EqualFunc(existing.Data, next.Data, bytes.Equal) && maps.Equal(existing.Labels, next.Labels) && maps.Equal(existing.Annotations, next.Annotations) {
		return existing, "unchanged", nil
	}
	w, err := secrets.Update(ctx, next, metav1.UpdateOptions{FieldManager: FieldManager})
	return w, "updated", err
}

// sameExport refuses an object that exists and is not this very export: one federate-system has no
// record of (see exportrecord.go: labels anyone may write) is someone else's; one with another
// credential's or format's labels is another export.
func sameExport(kind, ns, name string, obj metav1.Object, want map[string]string, rec *exportRecord, uid types.UID) error {
	have := obj.GetLabels()
	if rec == nil || !rec.owns(obj, uid) {
		return fmt.Errorf("%s %s/%s exists and was not written by an export: refusing to replace it; choose another name or namespace", kind, ns, name)
	}
	for _, k := range []string{LabelRemoteClusterID, LabelRole, LabelSlice, export.LabelOf, export.LabelFormat} {
		if have[k] != want[k] {
			return fmt.Errorf("%s %s/%s is the export of %s in format %s: refusing to replace it with another; choose another name, or delete that export first",
				kind, ns, name, exportedWhat(have), have[export.LabelFormat])
		}
	}
	return nil
}

func exportedWhat(l map[string]string) string {
	if s := l[LabelSlice]; s != "" {
		return fmt.Sprintf("resource slice %q of provider %q", s, l[LabelRemoteClusterID])
	}
	return fmt.Sprintf("the pairing with provider %q", l[LabelRemoteClusterID])
}

// targetServed tells, through discovery, whether this cluster serves Admiralty's Target: an export never
// installs another tool's CRD.
func (c *Cluster) targetServed() error {
	gv := export.TargetGVR.GroupVersion().String()
	list, err := c.Kube.Discovery().ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return ErrTargetNotServed
	}
	if err != nil {
		return fmt.Errorf("discovering %s: %w", gv, err)
	}
	for _, r := range list.APIResources {
		if r.Name == export.TargetGVR.Resource {
			return nil
		}
	}
	return ErrTargetNotServed
}

// refreshExports rewrites, in place, every recorded export of a credential just replaced (slice "" for
// the pairing's) with the new kubeconfig, so that the tools reading them follow a renewal. Each export
// keeps its name, format and whatever others added to it. A Secret that only looks like an export (its
// labels, which anyone who may write Secrets there can set) is never written: see exportrecord.go.
func (c *Cluster) refreshExports(ctx context.Context, providerID, slice string, kc []byte) error {
	exps, err := c.recordedExports(ctx, providerID, slice, true)
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("reading the exports of %s: %w", describeCredential(providerID, slice), err))
	}
	for _, e := range exps {
		objs, err := export.Rebuild(e.secret, kc)
		if err == nil {
			_, _, err = c.writeExportSecret(ctx, e.secret, objs.Secret)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("export Secret %s/%s: %w", e.secret.Namespace, e.secret.Name, err))
		}
	}
	return errors.Join(errs...)
}

// rewriteExports is refreshExports as a step of an import: a failure is reported, not returned, since the
// credential itself is stored and works; exporting again repairs it.
func (c *Cluster) rewriteExports(ctx context.Context, providerID, slice string, kc []byte) {
	if err := c.refreshExports(ctx, providerID, slice, kc); err != nil {
		c.report().Warn("The new credential is stored, but not every export of it was rewritten (export it again): " + err.Error())
	}
}

func describeCredential(providerID, slice string) string {
	if slice == "" {
		return fmt.Sprintf("the pairing with provider %q", providerID)
	}
	return fmt.Sprintf("resource slice %q of provider %q", slice, providerID)
}

// deleteExports deletes the recorded exports of a provider's credentials (slice "": all of them; else
// one slice's), their Admiralty Targets, and the records: each exactly the object recorded (a stranger
// under a recorded name is left alone). The Target goes by its recorded name, with or without its Secret.
// An export the user may not read is reported and left, with its record.
func (c *Cluster) deleteExports(ctx context.Context, providerID, slice string) error {
	records, err := c.exportRecords(ctx, providerID, slice, false)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range records {
		sec, err := c.recordedSecret(ctx, r)
		if err == nil && r.targetName != "" {
			err = c.deleteExportTarget(ctx, r)
		}
		if err == nil && sec != nil {
			uid := sec.UID
			err = ignoreNotFound(c.Kube.CoreV1().Secrets(sec.Namespace).Delete(ctx, sec.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}))
		}
		if errors.Is(err, errHidden) {
			c.report().Warn(err.Error())
			continue
		}
		if err != nil {
			errs = append(errs, err) // the record stays, so that a re-run finds the export
			continue
		}
		uid := r.sec.UID
		errs = append(errs, ignoreNotFound(c.Kube.CoreV1().Secrets(SystemNamespace).Delete(ctx, r.sec.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})))
	}
	return errors.Join(errs...)
}

// deleteExportTarget deletes an Admiralty export's Target: the recorded object, never another one of
// that name.
func (c *Cluster) deleteExportTarget(ctx context.Context, r exportRecord) error {
	targets := c.Dynamic.Resource(export.TargetGVR).Namespace(r.namespace)
	t, err := targets.Get(ctx, r.targetName, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s %s/%s: %w", export.TargetKind, r.namespace, r.targetName, errHidden)
	case err != nil:
		return ignoreNotFound(err) // gone, or Admiralty uninstalled with its CRD
	case !r.owns(t, r.targetUID):
		return nil // not ours: left alone
	}
	uid := t.GetUID()
	return ignoreNotFound(targets.Delete(ctx, r.targetName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}))
}

// Exports lists every recorded export this cluster holds, for status.
func (c *Cluster) Exports(ctx context.Context) ([]ExportState, error) {
	exps, err := c.recordedExports(ctx, "", "", false)
	if err != nil {
		return nil, err
	}
	out := []ExportState{}
	for _, e := range exps {
		s := e.secret
		out = append(out, ExportState{RemoteClusterID: s.Labels[LabelRemoteClusterID], ResourceSlice: s.Labels[LabelSlice], Format: s.Labels[export.LabelFormat],
			Namespace: s.Namespace, Name: s.Annotations[export.AnnotationName], Secret: s.Name})
	}
	slices.SortFunc(out, func(a, b ExportState) int {
		return strings.Compare(a.RemoteClusterID+"/"+a.ResourceSlice+"/"+a.Namespace+"/"+a.Name+"/"+a.Format,
			b.RemoteClusterID+"/"+b.ResourceSlice+"/"+b.Namespace+"/"+b.Name+"/"+b.Format)
	})
	return out, nil
}
