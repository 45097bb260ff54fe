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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/export"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/member"
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
	Exec       *export.Exec
	// MintArgs are the plugin's arguments for a federated pairing's export (Exec's command): they name
	// the provider, and the plugin mints the pairing's token on this cluster every time it runs, so the
	// export holds none.
	MintArgs []string
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

// ErrClusterProfileNotServed says that this cluster serves no ClusterProfile API in a version an export
// writes: the CRD is the cluster inventory's, installed by its administrator, never by an export.
var ErrClusterProfileNotServed = errors.New("this cluster serves no " + export.ClusterProfileKind + " API (" + export.ClusterProfileCRD + ", version " +
	strings.Join(export.ClusterProfileVersions, " or ") + "): its CRD is not installed here, and an export never installs it; install it first " +
	"(config/crd/bases of sigs.k8s.io/cluster-inventory-api)")

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
	// State is ExportSecretGone for a record whose Secret is gone; empty for an export as written.
	State string `json:"state,omitempty"`
}

// ExportSecretGone is the state of an export whose Secret was deleted, or replaced by another object, by
// someone else: its record remains, and its Target or ClusterProfile if it had one.
const ExportSecretGone = "SecretGone"

func exportLabels(providerID, slice string) map[string]string {
	if slice == "" {
		l := member.IdentityLabels(providerID)
		l[export.LabelOf] = export.OfPairing
		return l
	}
	l := member.SliceLabels(providerID, slice)
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
func BuildExport(ctx context.Context, c *member.Cluster, o ExportOptions) (*export.Objects, error) {
	var kc []byte
	var fed *v1alpha1.Identity
	var err error
	if o.Slice == "" {
		kc, fed, err = pairingKubeconfig(ctx, c, o.ProviderID)
	} else {
		kc, err = GetSliceKubeconfig(ctx, c, o.ProviderID, o.Slice)
	}
	if err != nil {
		return nil, err
	}
	spec := export.Spec{Format: o.Format, Name: o.name(), Namespace: o.Namespace, Key: o.Key,
		Labels: exportLabels(o.ProviderID, o.Slice), Kubeconfig: kc, Exec: o.Exec, MemberID: o.ProviderID}
	if fed != nil {
		// Nothing to copy: the client mints the pairing's token on this cluster each time it runs, and the
		// kubeconfig carries only where the provider is.
		spec.Minted = true
		if o.Exec != nil {
			spec.Exec = &export.Exec{Command: o.Exec.Command, Args: o.MintArgs}
		}
		if spec.Kubeconfig, err = kubeconfig.Build(kubeconfig.Params{Name: fed.Spec.ClusterID, Server: fed.Spec.APIServer, CA: fed.Spec.CA,
			ProxyURL: fed.Spec.ProxyURL, Namespace: fed.Spec.Namespace}); err != nil {
			return nil, err
		}
	}
	return export.Build(spec)
}

// Export writes a credential this cluster holds in a tool's format, in a namespace that must exist. It
// never takes over an object it did not make: a Secret, Target or ClusterProfile of that name that is not
// this export's (no export labels, or another credential's or format's) is refused before anything is
// written. Running it again changes nothing, or brings the objects up to date.
func Export(ctx context.Context, c *member.Cluster, o ExportOptions) ([]ExportedObject, error) {
	objs, err := BuildExport(ctx, c, o)
	if err != nil {
		return nil, err
	}
	if o.Namespace == member.SystemNamespace {
		// Whoever may write federate-system (a consumer operator) could write both an export and its
		// record there: the record would prove nothing.
		return nil, fmt.Errorf("namespace %s holds this tool's own objects and the export records: an export goes to the tool's namespace; nothing was written", member.SystemNamespace)
	}
	if _, err := c.Kube.CoreV1().Namespaces().Get(ctx, o.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return nil, &NamespaceNotFoundError{Namespace: o.Namespace}
	} else if err != nil {
		return nil, err
	}
	apis := newServedAPIs(c)
	if objs.Target != nil {
		// Written in the version this cluster serves (the preferred one of the allow-list).
		gvr, err := apis.resolve(objs.Target.GetKind())
		if err != nil {
			return nil, err
		}
		objs.Target.SetAPIVersion(gvr.GroupVersion().String())
	}
	cur, err := readCurrentExport(ctx, c, apis, o, objs)
	if err != nil {
		return nil, err
	}
	rec, created, err := claimExport(ctx, c, apis, o, cur, objs)
	if err != nil {
		return nil, err
	}
	return writeExport(ctx, c, apis, o, objs, cur, rec, created)
}

// currentExport is what an export finds under its names: the Secret, the second object (the Target or
// ClusterProfile; "target" in what follows) and the record, each checked to be this very export's if it
// exists (sameExport).
type currentExport struct {
	secret *corev1.Secret
	target *unstructured.Unstructured
	rec    *exportRecord
}

func readCurrentExport(ctx context.Context, c *member.Cluster, apis *servedAPIs, o ExportOptions, objs *export.Objects) (*currentExport, error) {
	var cur currentExport
	var err error
	cur.secret, err = c.Kube.CoreV1().Secrets(o.Namespace).Get(ctx, objs.Secret.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cur.secret = nil
	} else if err != nil {
		return nil, err
	}
	if cur.rec, err = getExportRecord(ctx, c, o.Namespace, objs.Secret.Name); err != nil {
		return nil, err
	}
	if cur.secret != nil {
		if err := sameExport("Secret", o.Namespace, objs.Secret.Name, cur.secret, objs.Secret.Labels, cur.rec, cur.rec.uid(false)); err != nil {
			return nil, err
		}
	}
	if objs.Target == nil {
		return &cur, nil
	}
	kind := objs.Target.GetKind()
	cur.target, err = apis.get(ctx, kind, o.Namespace, objs.Target.GetName())
	if apierrors.IsNotFound(err) {
		cur.target = nil
	} else if err != nil {
		return nil, err
	}
	if cur.target != nil {
		if cur.rec == nil || !cur.rec.ownsTarget(cur.target) {
			return nil, fmt.Errorf("%s %s/%s exists and was not written by an export: refusing to replace it; choose another name or namespace", kind, o.Namespace, objs.Target.GetName())
		}
		if err := sameExport(kind, o.Namespace, objs.Target.GetName(), cur.target, objs.Target.GetLabels(), cur.rec, cur.rec.uid(true)); err != nil {
			return nil, err
		}
	}
	return &cur, nil
}

// claimExport writes the export's record before any credential (see exportrecord.go), and marks the
// objects to write with the record's claim. rewrote tells whether the record is new, or was another
// credential's: a failed run deletes it. A record of another credential that got this far names a
// Secret that is gone; its Target or ClusterProfile, if one is recorded and still there, is that export's
// and is refused. This credential's own under another name or kind (an Admiralty export turned into
// another format) goes first: a record never forgets a second object it names. created tells whether the
// record is new.
func claimExport(ctx context.Context, c *member.Cluster, apis *servedAPIs, o ExportOptions, cur *currentExport, objs *export.Objects) (rec *exportRecord, rewrote bool, err error) {
	rec = cur.rec
	targetKind, targetName := "", ""
	if objs.Target != nil {
		targetKind, targetName = objs.Target.GetKind(), objs.Target.GetName()
	}
	same := rec != nil && rec.providerID == o.ProviderID && rec.slice == o.Slice
	if rec != nil && rec.targetName != "" && (rec.kind() != targetKind || rec.targetName != targetName || !same) {
		t, err := apis.get(ctx, rec.kind(), rec.namespace, rec.targetName)
		switch {
		case err == nil && !same && rec.ownsTarget(t):
			return nil, false, fmt.Errorf("%s %s/%s of the export of %s still reads the Secret %s: refusing to put another credential there; delete that %s first, or choose another name",
				rec.kind(), rec.namespace, rec.targetName, describeCredential(rec.providerID, rec.slice), rec.name, rec.kind())
		case err == nil:
			if _, err := deleteExportTarget(ctx, c, apis, *rec); err != nil {
				return nil, false, err
			}
		case !apierrors.IsNotFound(err):
			return nil, false, err
		}
	}
	// An object a pending record owns by its claim alone (a run cut off between its writes) has carried that
	// claim where every reader of its namespace (of Targets, for a Target) could copy it: it may be a
	// lookalike. It is never written nor pinned; exactly that object is deleted, and made again.
	if same && cur.secret != nil && rec.secretUID == "" {
		if err := deleteSecret(ctx, c, o.Namespace, cur.secret.Name, cur.secret.UID); err != nil {
			return nil, false, err
		}
		cur.secret = nil
	}
	if same && cur.target != nil && rec.targetUID == "" {
		if err := apis.delete(ctx, targetKind, o.Namespace, cur.target.GetName(), cur.target.GetUID()); err != nil {
			return nil, false, err
		}
		cur.target = nil
	}
	spec := recordSpec{providerID: o.ProviderID, slice: o.Slice, format: o.Format, namespace: o.Namespace, name: objs.Secret.Name, targetKind: targetKind, targetName: targetName}
	// What currentExport found and proved ours is pinned by UID before anything is written: a pending
	// record's fresh claim must not cut it loose. An object that is gone is not pinned (its UID owns
	// nothing): whatever this run is to create is then pending, under a fresh claim no one has seen, by
	// which the undo recognises an object whose create failed ambiguously.
	if same && cur.secret != nil {
		spec.secretUID = cur.secret.UID
	}
	if same && cur.target != nil && rec.targetName == targetName && rec.kind() == targetKind {
		spec.targetUID = cur.target.GetUID()
	}
	stored, err := recordExport(ctx, c, rec, spec)
	if err != nil {
		return nil, false, err
	}
	mark := func(m metav1.Object) {
		a := m.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[AnnExportClaim] = stored.claim
		m.SetAnnotations(a)
	}
	mark(objs.Secret)
	if objs.Target != nil {
		mark(objs.Target)
	}
	return stored, !same, nil
}

// writeExport writes the Secret and the Target or ClusterProfile (a ClusterProfile's status through its
// status subresource, after the object), then completes the record with their UIDs; on a failure it
// undoes what this run created.
func writeExport(ctx context.Context, c *member.Cluster, apis *servedAPIs, o ExportOptions, objs *export.Objects, cur *currentExport, rec *exportRecord, rewrote bool) ([]ExportedObject, error) {
	rollback := undoExport{existing: cur.secret, existingTarget: cur.target, record: rec, deleteRecord: rewrote, apis: apis,
		spec: recordSpec{providerID: o.ProviderID, slice: o.Slice, format: o.Format, namespace: o.Namespace, name: objs.Secret.Name}}
	if objs.Target != nil {
		rollback.targetKind = objs.Target.GetKind()
	}
	written, action, err := writeExportSecret(ctx, c, cur.secret, objs.Secret)
	if err != nil {
		if cur.secret == nil {
			rollback.written, rollback.unsure = createdAnyway(ctx, rec, err, func(ctx context.Context) (*corev1.Secret, error) {
				return c.Kube.CoreV1().Secrets(o.Namespace).Get(ctx, objs.Secret.Name, metav1.GetOptions{})
			})
		}
		return nil, undo(ctx, c, rollback, err)
	}
	rollback.written = written
	out := []ExportedObject{{Kind: "Secret", Namespace: o.Namespace, Name: objs.Secret.Name, Action: action}}
	spec := recordSpec{providerID: o.ProviderID, slice: o.Slice, format: o.Format, namespace: o.Namespace, name: objs.Secret.Name, secretUID: written.UID}
	if objs.Target != nil {
		kind := objs.Target.GetKind()
		targets, err := apis.resource(kind, o.Namespace)
		if err != nil {
			return out, undo(ctx, c, rollback, err)
		}
		action := "created"
		var t *unstructured.Unstructured
		switch next, changed := mergeObject(cur.target, objs.Target); {
		case cur.target == nil:
			t, err = targets.Create(ctx, objs.Target, metav1.CreateOptions{FieldManager: member.FieldManager})
			rollback.target = t
		case !changed:
			t, action = cur.target, "unchanged"
		default:
			t, err = targets.Update(ctx, next, metav1.UpdateOptions{FieldManager: member.FieldManager})
			action = "updated"
		}
		if err == nil && kind == export.ClusterProfileKind {
			// The status subresource: a create or an update of the object leaves status as it was.
			var wrote bool
			if t, wrote, err = writeProfileStatus(ctx, targets, t, objs.Target); wrote && action == "unchanged" {
				action = "updated"
			}
		}
		if err != nil {
			if cur.target == nil && rollback.target == nil {
				rollback.target, rollback.unsure = createdAnyway(ctx, rec, err, func(ctx context.Context) (*unstructured.Unstructured, error) {
					return targets.Get(ctx, objs.Target.GetName(), metav1.GetOptions{})
				})
				if rollback.unsure {
					rollback.unsureTarget = objs.Target.GetName()
				}
			}
			return out, undo(ctx, c, rollback, err)
		}
		spec.targetKind, spec.targetName, spec.targetUID = kind, objs.Target.GetName(), t.GetUID()
		out = append(out, ExportedObject{Kind: kind, Namespace: o.Namespace, Name: spec.targetName, Action: action})
	}
	if _, err := recordExport(ctx, c, rec, spec); err != nil {
		return out, undo(ctx, c, rollback, err)
	}
	return out, nil
}

// createdAnyway finds the object a create that failed ambiguously (a timeout, a lost connection, a
// cancelled context: the API server may have stored it) made after all: the one carrying this run's fresh
// claim, which nothing else can carry. A definite refusal created nothing.
// unsure tells that the create may still be stored later (a 504 from the API server's timeout filter
// leaves the handler running): nothing carrying the claim was found yet.
func createdAnyway[T metav1.Object](ctx context.Context, rec *exportRecord, cause error, get func(context.Context) (T, error)) (T, bool) {
	var none T
	var s apierrors.APIStatus
	if errors.As(cause, &s) && s.Status().Code > 0 && s.Status().Code < 500 {
		return none, false // refused (AlreadyExists, Forbidden, Invalid, a webhook): nothing was stored
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), member.CleanupTimeout)
	defer cancel()
	obj, err := get(ctx)
	if err != nil || !rec.owns(obj, "") {
		return none, true
	}
	return obj, false
}

// undoExport is what a failed export created, to be deleted: an unrecorded export would be a stranger to
// every later run, left behind, and a record this run made would name nothing. An existing export that
// was updated stays, as it was recorded before.
type undoExport struct {
	existing, written *corev1.Secret
	target            *unstructured.Unstructured
	existingTarget    *unstructured.Unstructured
	targetKind        string // the kind of target, existingTarget and unsureTarget
	record            *exportRecord
	deleteRecord      bool       // the record is this run's (new, or taken from another credential)
	unsure            bool       // a create failed ambiguously and its object was not found: it may land later
	unsureTarget      string     // the Target's or ClusterProfile's name such a create was for
	spec              recordSpec // the export's names, for a record of what could not be undone
	apis              *servedAPIs
}

// undo deletes what a failed export created (see undoExport), each object by its UID, and then the
// record if it is this run's. What cannot be deleted stays recorded, so that unauthenticate still finds
// it: the record is completed with its UID instead.
func undo(ctx context.Context, c *member.Cluster, u undoExport, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), member.CleanupTimeout) // the export failed, perhaps on ctx
	defer cancel()
	errs := []error{cause}
	left := u.spec
	if u.existing != nil {
		left.secretUID = u.existing.UID
	}
	if u.existingTarget != nil {
		left.targetKind, left.targetName, left.targetUID = u.targetKind, u.existingTarget.GetName(), u.existingTarget.GetUID()
	}
	if u.existing == nil && u.written != nil {
		uid := u.written.UID
		if err := deleteSecret(ctx, c, u.written.Namespace, u.written.Name, uid); err != nil {
			errs = append(errs, err)
			left.secretUID = uid
		}
	}
	if u.target != nil {
		uid := u.target.GetUID()
		if err := u.apis.delete(ctx, u.targetKind, u.target.GetNamespace(), u.target.GetName(), uid); err != nil {
			errs = append(errs, err)
			left.targetKind, left.targetName, left.targetUID = u.targetKind, u.target.GetName(), uid
		}
	}
	if u.unsure && left.targetName == "" && u.unsureTarget != "" {
		left.targetKind, left.targetName = u.targetKind, u.unsureTarget
	}
	switch {
	case u.record == nil:
	case u.unsure:
		// What may still be stored carries the record's claim: the record stays, pending under that very
		// claim, so that the re-run and deleteExports find (and delete) it; a claim only lets a run delete.
		left.keepClaim = true
		if _, err := recordExport(ctx, c, u.record, left); err != nil {
			errs = append(errs, err)
		}
	case left.secretUID != "" || left.targetUID != "":
		if _, err := recordExport(ctx, c, u.record, left); err != nil {
			errs = append(errs, err)
		}
	case u.deleteRecord || (u.existing == nil && u.written != nil) || u.target != nil:
		// The record names nothing left, and this run published its claim on an object it has just
		// deleted: kept pending, it would own whatever a reader of that namespace makes with that claim.
		errs = append(errs, deleteSecret(ctx, c, member.SystemNamespace, u.record.sec.Name, u.record.sec.UID))
	}
	return errors.Join(errs...)
}

// mergeObject is the existing Target or ClusterProfile with want's spec, labels and annotations, keeping
// the labels and annotations others added (as writeExportSecret does) and its status; changed is false
// when that is what it already is.
func mergeObject(existing, want *unstructured.Unstructured) (next *unstructured.Unstructured, changed bool) {
	if existing == nil {
		return nil, true
	}
	next = existing.DeepCopy()
	l, a := next.GetLabels(), next.GetAnnotations()
	if l == nil {
		l = map[string]string{}
	}
	if a == nil {
		a = map[string]string{}
	}
	maps.Copy(l, want.GetLabels())
	maps.Copy(a, want.GetAnnotations())
	next.SetLabels(l)
	next.SetAnnotations(a)
	spec, _, _ := unstructured.NestedMap(want.Object, "spec")
	have, _, _ := unstructured.NestedMap(existing.Object, "spec")
	next.Object["spec"] = spec
	return next, fmt.Sprint(have) != fmt.Sprint(spec) || !maps.Equal(existing.GetLabels(), l) || !maps.Equal(existing.GetAnnotations(), a)
}

// writeProfileStatus writes want's access providers into the status of the ClusterProfile have, through
// the status subresource (export.MergeStatus: what others wrote there stays); wrote is false when it
// already held them.
func writeProfileStatus(ctx context.Context, profiles dynamic.ResourceInterface, have, want *unstructured.Unstructured) (*unstructured.Unstructured, bool, error) {
	status, changed := export.MergeStatus(have, want)
	if !changed {
		return have, false, nil
	}
	next := have.DeepCopy()
	next.Object["status"] = status
	w, err := profiles.UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: member.FieldManager})
	if err != nil {
		return nil, true, fmt.Errorf("%s %s/%s: writing its status: %w", export.ClusterProfileKind, have.GetNamespace(), have.GetName(), err)
	}
	return w, true, nil
}

// writeExportSecret creates sec, or replaces the existing export's data and our labels, keeping what
// others added to it (an Argo CD user's labels for ApplicationSets, say).
func writeExportSecret(ctx context.Context, c *member.Cluster, existing, sec *corev1.Secret) (*corev1.Secret, string, error) {
	secrets := c.Kube.CoreV1().Secrets(sec.Namespace)
	if existing == nil {
		w, err := secrets.Create(ctx, sec, metav1.CreateOptions{FieldManager: member.FieldManager})
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
	w, err := secrets.Update(ctx, next, metav1.UpdateOptions{FieldManager: member.FieldManager})
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
	for _, k := range []string{member.LabelRemoteClusterID, member.LabelRole, member.LabelSlice, export.LabelOf, export.LabelFormat} {
		if have[k] != want[k] {
			return fmt.Errorf("%s %s/%s is the export of %s in format %s: refusing to replace it with another; choose another name, or delete that export first",
				kind, ns, name, exportedWhat(have), have[export.LabelFormat])
		}
	}
	return nil
}

func exportedWhat(l map[string]string) string {
	if s := l[member.LabelSlice]; s != "" {
		return fmt.Sprintf("resource slice %q of provider %q", s, l[member.LabelRemoteClusterID])
	}
	return fmt.Sprintf("the pairing with provider %q", l[member.LabelRemoteClusterID])
}

// targetAPI is one kind of object an export may write beside its Secret, and record: the allow-list. A
// record names the kind, never a resource, so that one edited in federate-system reaches no other API.
type targetAPI struct {
	resource  schema.GroupResource
	versions  []string // the versions an export writes, preferred first
	notServed error
}

var targetAPIs = map[string]targetAPI{
	export.TargetKind:         {resource: export.TargetGVR.GroupResource(), versions: []string{export.TargetGVR.Version}, notServed: ErrTargetNotServed},
	export.ClusterProfileKind: {resource: export.ClusterProfileGroupResource, versions: export.ClusterProfileVersions, notServed: ErrClusterProfileNotServed},
}

// servedAPIs finds, through discovery, the version of each allowed kind this cluster serves: once per
// run, whatever the number of exports. An export never installs another API.
type servedAPIs struct {
	c     *member.Cluster
	found map[string]schema.GroupVersionResource
	errs  map[string]error
}

func newServedAPIs(c *member.Cluster) *servedAPIs {
	return &servedAPIs{c: c, found: map[string]schema.GroupVersionResource{}, errs: map[string]error{}}
}

// resolve is the resource of kind in the first of its versions this cluster serves, or the kind's
// notServed error.
func (s *servedAPIs) resolve(kind string) (schema.GroupVersionResource, error) {
	if gvr, ok := s.found[kind]; ok {
		return gvr, nil
	}
	if err, ok := s.errs[kind]; ok {
		return schema.GroupVersionResource{}, err
	}
	api, ok := targetAPIs[kind]
	if !ok {
		return schema.GroupVersionResource{}, fmt.Errorf("an export writes no %q", kind)
	}
	for _, v := range api.versions {
		gvr := api.resource.WithVersion(v)
		list, err := s.c.Kube.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return schema.GroupVersionResource{}, fmt.Errorf("discovering %s: %w", gvr.GroupVersion(), err) // not remembered: a retry may do
		}
		if slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource }) {
			s.found[kind] = gvr
			return gvr, nil
		}
	}
	s.errs[kind] = api.notServed
	return schema.GroupVersionResource{}, api.notServed
}

func (s *servedAPIs) resource(kind, ns string) (dynamic.ResourceInterface, error) {
	gvr, err := s.resolve(kind)
	if err != nil {
		return nil, err
	}
	return s.c.Dynamic.Resource(gvr).Namespace(ns), nil
}

// get reads one object of kind; a kind this cluster does not serve (its CRD uninstalled) has no object:
// NotFound.
func (s *servedAPIs) get(ctx context.Context, kind, ns, name string) (*unstructured.Unstructured, error) {
	r, err := s.resource(kind, ns)
	if err != nil {
		if api, ok := targetAPIs[kind]; ok && errors.Is(err, api.notServed) {
			return nil, apierrors.NewNotFound(api.resource, name)
		}
		return nil, err
	}
	return r.Get(ctx, name, metav1.GetOptions{})
}

// delete deletes exactly the object of that UID (never another one made under its name since), and
// takes "already gone" (its API too) as done.
func (s *servedAPIs) delete(ctx context.Context, kind, ns, name string, uid types.UID) error {
	r, err := s.resource(kind, ns)
	if err != nil {
		if api, ok := targetAPIs[kind]; ok && errors.Is(err, api.notServed) {
			return nil
		}
		return err
	}
	return objects.IgnoreNotFound(r.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}))
}

// refreshExports rewrites, in place, every recorded export of a credential just replaced (slice "" for
// the pairing's) with the new kubeconfig, so that the tools reading them follow a renewal. Each export
// keeps its name, format and whatever others added to it. A Secret that only looks like an export (its
// labels, which anyone who may write Secrets there can set) is never written: see exportrecord.go. A
// ClusterProfile's status is written again only when what it says changed (the provider's server, CA or
// proxy): a renewal alone leaves it as it is.
func refreshExports(ctx context.Context, c *member.Cluster, providerID, slice string, kc []byte) error {
	exps, _, err := recordedExports(ctx, c, providerID, slice, true)
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("reading the exports of %s: %w", describeCredential(providerID, slice), err))
	}
	apis := newServedAPIs(c)
	for _, e := range exps {
		objs, err := export.Rebuild(e.secret, kc, providerID)
		if err == nil {
			_, _, err = writeExportSecret(ctx, c, e.secret, objs.Secret)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("export Secret %s/%s: %w", e.secret.Namespace, e.secret.Name, err))
			continue
		}
		if e.record.kind() == export.ClusterProfileKind && e.record.targetName != "" && objs.Target != nil {
			errs = append(errs, refreshProfile(ctx, apis, e.record, objs.Target))
		}
	}
	return errors.Join(errs...)
}

// refreshProfile brings the status of an export's recorded ClusterProfile up to date; one that is gone,
// or is not the recorded one, is left to the next export.
func refreshProfile(ctx context.Context, apis *servedAPIs, r exportRecord, want *unstructured.Unstructured) error {
	if r.targetUID == "" {
		return nil
	}
	cp, err := apis.get(ctx, export.ClusterProfileKind, r.namespace, r.targetName)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("%s %s/%s: %w", export.ClusterProfileKind, r.namespace, r.targetName, err)
	case !r.ownsTarget(cp):
		return nil
	}
	profiles, err := apis.resource(export.ClusterProfileKind, r.namespace)
	if err != nil {
		return err
	}
	_, _, err = writeProfileStatus(ctx, profiles, cp, want)
	return err
}

// RewriteExports is refreshExports as a step of an import: a failure is reported, not returned, since the
// credential itself is stored and works; exporting again repairs it.
func RewriteExports(ctx context.Context, c *member.Cluster, providerID, slice string, kc []byte) {
	if err := refreshExports(ctx, c, providerID, slice, kc); err != nil {
		c.Reporter().Warn("The new credential is stored, but not every export of it was rewritten (export it again): " + err.Error())
	}
}

func describeCredential(providerID, slice string) string {
	if slice == "" {
		return fmt.Sprintf("the pairing with provider %q", providerID)
	}
	return fmt.Sprintf("resource slice %q of provider %q", slice, providerID)
}

// DeleteExports deletes the recorded exports of a provider's credentials (slice "": all of them; else
// one slice's), their Admiralty Targets and ClusterProfiles, and the records: each exactly the object
// recorded (a stranger under a recorded name is left alone). The Target or ClusterProfile goes by its
// recorded name, with or without its Secret, and before it (nothing is left pointing at a Secret anyone
// may make again). An export the user may not read is reported and left, with its record.
func DeleteExports(ctx context.Context, c *member.Cluster, providerID, slice string) error {
	records, err := ExportRecords(ctx, c, providerID, slice, false)
	if err != nil {
		return err
	}
	apis := newServedAPIs(c)
	var errs []error
	for _, r := range records {
		sec, err := recordedSecret(ctx, c, r)
		if err == nil && r.targetName != "" {
			_, err = deleteExportTarget(ctx, c, apis, r)
		}
		if err == nil && sec != nil {
			err = deleteSecret(ctx, c, sec.Namespace, sec.Name, sec.UID)
		}
		if leftAlone(err) {
			c.Reporter().Warn(err.Error())
			continue
		}
		if err != nil {
			errs = append(errs, err) // the record stays, so that a re-run finds the export
			continue
		}
		errs = append(errs, deleteSecret(ctx, c, member.SystemNamespace, r.sec.Name, r.sec.UID))
	}
	return errors.Join(errs...)
}

// deleteExportTarget deletes an export's Target or ClusterProfile: the recorded object, never another
// one of that name. deleted tells whether there was one to delete.
func deleteExportTarget(ctx context.Context, _ *member.Cluster, apis *servedAPIs, r exportRecord) (deleted bool, err error) {
	t, err := apis.get(ctx, r.kind(), r.namespace, r.targetName)
	switch {
	case apierrors.IsForbidden(err):
		return false, fmt.Errorf("%s %s/%s: %w", r.kind(), r.namespace, r.targetName, errHidden)
	case err != nil:
		return false, objects.IgnoreNotFound(err) // gone, or uninstalled with its CRD
	case !r.ownsTarget(t):
		return false, nil // not ours: left alone
	}
	return true, apis.delete(ctx, r.kind(), r.namespace, r.targetName, t.GetUID())
}

// Exports lists every recorded export this cluster holds, for status.
func Exports(ctx context.Context, c *member.Cluster) ([]ExportState, error) {
	exps, gone, err := recordedExports(ctx, c, "", "", false)
	if err != nil {
		return nil, err
	}
	out := []ExportState{}
	for _, e := range exps {
		s := e.secret
		out = append(out, ExportState{RemoteClusterID: s.Labels[member.LabelRemoteClusterID], ResourceSlice: s.Labels[member.LabelSlice], Format: s.Labels[export.LabelFormat],
			Namespace: s.Namespace, Name: s.Annotations[export.AnnotationName], Secret: s.Name})
	}
	// A record alone: its Secret was deleted (or replaced) by someone else. What the Secret said (format,
	// name in the tool) went with it; the record still names the Secret, and the kind of its Target or
	// ClusterProfile, which gives the format away.
	for _, r := range gone {
		out = append(out, ExportState{RemoteClusterID: r.providerID, ResourceSlice: r.slice, Format: r.format(), Namespace: r.namespace, Secret: r.name,
			State: ExportSecretGone})
	}
	slices.SortFunc(out, func(a, b ExportState) int {
		return strings.Compare(a.RemoteClusterID+"/"+a.ResourceSlice+"/"+a.Namespace+"/"+a.Name+"/"+a.Format,
			b.RemoteClusterID+"/"+b.ResourceSlice+"/"+b.Namespace+"/"+b.Name+"/"+b.Format)
	})
	return out, nil
}
