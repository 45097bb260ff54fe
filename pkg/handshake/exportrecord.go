package handshake

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/federate-dev/kubectl-federate/pkg/export"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// An export's Secret lives in a namespace other people write in (argocd, flux-system, a team's own), so
// its labels prove nothing: anyone who may create a Secret there can label one as an export. Were labels
// trusted, a renewal would write the new credential into that Secret and hand it to whoever made it. So
// every export is recorded in federate-system, which only this tool's users write, by the exact objects it
// wrote (namespace, names and UIDs): only a recorded object is ever rewritten, adopted or deleted. A
// Secret deleted and made again under the same name has another UID, and is a stranger.
//
// Both sides must agree: the record names the provider and slice, and so do the export's own labels, in a
// namespace a consumer operator (who may write federate-system) cannot write. A record forged there to
// point at another credential's export finds an object whose labels disagree, and touches nothing.
//
// The record is written before the credential, without UIDs (pending), then completed: a run that cannot
// record writes no credential. It holds a random claim, which the objects the export writes carry: a
// pending record (a run cut off between its writes) owns only an object that carries its claim, which no
// one who cannot read federate-system can know, never one that merely has the right labels and name. A
// run that fails deletes what it created, the record included.
const (
	// LabelExportRecordOf and labelExportRecordSlice select the records of a provider's credentials. They
	// are not the credential labels (remote cluster ID, role), so that nothing that lists a pairing's
	// Secrets in federate-system mistakes a record for a credential.
	LabelExportRecordOf    = "federate.dev/export-record-of"
	labelExportRecordSlice = "federate.dev/export-record-slice"
	annExportNamespace     = "federate.dev/export-namespace"
	// annExportFormat is the export's format, so that a record whose Secret is gone still says it (records
	// written before it say nothing: see exportRecord.format).
	annExportFormat    = "federate.dev/export-format"
	annExportSecret    = "federate.dev/export-secret"     //nolint:gosec // an annotation key, not a credential
	AnnExportSecretUID = "federate.dev/export-secret-uid" //nolint:gosec // an annotation key, not a credential
	// AnnExportTarget and AnnExportTargetUID name the export's second object, an Admiralty Target or a
	// ClusterProfile; AnnExportTargetKind its kind, one of the allow-list targetAPIs (absent: Target, as
	// records written before ClusterProfiles say).
	AnnExportTarget     = "federate.dev/export-target"
	AnnExportTargetUID  = "federate.dev/export-target-uid"
	AnnExportTargetKind = "federate.dev/export-target-kind"
	AnnExportClaim      = "federate.dev/export-claim"
	// exportRecordType marks a record: it holds no secret, but lives beside the credentials it points
	// at, under the same access.
	exportRecordType corev1.SecretType = "federate.dev/export-record"
)

// exportRecord is one export as federate-system records it.
type exportRecord struct {
	sec                         *corev1.Secret
	providerID, slice           string
	recordedFormat              string // "" in a record written before formats were recorded
	namespace, name, targetName string
	targetKind                  string // "" for a Target: see kind
	secretUID, targetUID        types.UID
	claim                       string
}

// recordSpec is what a record says.
type recordSpec struct {
	providerID, slice           string
	format                      string
	namespace, name, targetName string
	targetKind                  string
	secretUID, targetUID        types.UID
	keepClaim                   bool // an undo unsure whether a create landed: the claim it carries stays
}

// kind is the kind of the record's second object, if it names one.
func (r exportRecord) kind() string {
	if r.targetKind == "" {
		return export.TargetKind
	}
	return r.targetKind
}

// ExportRecordName names the record of the export Secret ns/name: one record per Secret, whatever it
// exports, so that a second export under that name finds the first.
func ExportRecordName(ns, name string) string {
	sum := sha256.Sum256([]byte(ns + "/" + name))
	return "export-" + hex.EncodeToString(sum[:10])
}

// recordOf reads a record; ok is false for a Secret that is not one, or whose name is not that of the
// export it names (one copied under another name).
func recordOf(s *corev1.Secret) (exportRecord, bool) {
	r := exportRecord{sec: s, providerID: s.Labels[LabelExportRecordOf], slice: s.Labels[labelExportRecordSlice], recordedFormat: s.Annotations[annExportFormat],
		namespace: s.Annotations[annExportNamespace], name: s.Annotations[annExportSecret], targetName: s.Annotations[AnnExportTarget],
		targetKind: s.Annotations[AnnExportTargetKind], secretUID: types.UID(s.Annotations[AnnExportSecretUID]),
		targetUID: types.UID(s.Annotations[AnnExportTargetUID]), claim: s.Annotations[AnnExportClaim]}
	_, allowed := targetAPIs[r.kind()]
	ok := s.Type == exportRecordType && s.Labels[member.LabelManagedBy] == member.ManagedBy && r.providerID != "" &&
		r.namespace != "" && r.name != "" && s.Name == ExportRecordName(r.namespace, r.name) && allowed
	return r, ok
}

// owns tells whether obj (the export's Secret, Target or ClusterProfile) is the object the record names: its UID
// when recorded; when pending, one that carries the record's claim. Either way, its labels must name the
// record's credential.
func (r exportRecord) owns(obj metav1.Object, uid types.UID) bool {
	l := obj.GetLabels()
	if l[member.LabelManagedBy] != member.ManagedBy || l[export.LabelFormat] == "" || l[member.LabelRole] != member.RoleConsumer ||
		l[member.LabelRemoteClusterID] != r.providerID || l[member.LabelSlice] != r.slice {
		return false
	}
	if uid != "" {
		return obj.GetUID() == uid
	}
	return r.claim != "" && obj.GetAnnotations()[AnnExportClaim] == r.claim
}

// uid is the recorded UID of the export's Secret, or of its Target or ClusterProfile; "" without a record,
// or pending.
func (r *exportRecord) uid(target bool) types.UID {
	switch {
	case r == nil:
		return ""
	case target:
		return r.targetUID
	}
	return r.secretUID
}

// ownsTarget is owns for an Admiralty Target or a ClusterProfile: also the kind and name the record
// names, pointing its tool at the record's Secret (a Target's spec.kubeconfigSecret; a ClusterProfile's
// annotation and the exec configuration of its access providers), so that a record edited to name another
// export's owns nothing.
func (r exportRecord) ownsTarget(t *unstructured.Unstructured) bool {
	secret, ok := export.PointsAt(t)
	return r.targetName != "" && t.GetKind() == r.kind() && t.GetName() == r.targetName && ok && secret == r.name && r.owns(t, r.targetUID)
}

// getExportRecord reads the record of the export Secret ns/name; nil when there is none.
func getExportRecord(ctx context.Context, c *member.Cluster, ns, name string) (*exportRecord, error) {
	s, err := c.Kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, ExportRecordName(ns, name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the record of export %s/%s: %w", ns, name, err)
	}
	r, ok := recordOf(s)
	if !ok || r.namespace != ns || r.name != name {
		return nil, nil
	}
	return &r, nil
}

// recordExport writes the record of an export (pending: no UIDs yet), or brings it up to date, and
// returns it as stored. A record keeps its claim; a new one gets a fresh one.
func recordExport(ctx context.Context, c *member.Cluster, have *exportRecord, spec recordSpec) (*exportRecord, error) {
	l := map[string]string{member.LabelManagedBy: member.ManagedBy, LabelExportRecordOf: spec.providerID}
	if spec.slice != "" {
		l[labelExportRecordSlice] = spec.slice
	}
	// A claim owns objects only while the record is pending; each pending write gets a fresh one, so that
	// a claim once written on an object (where whoever reads the object sees it) never owns another.
	claim := ""
	if have != nil && (spec.keepClaim || spec.secretUID != "" && (spec.targetName == "" || spec.targetUID != "")) {
		claim = have.claim
	}
	if claim == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		claim = hex.EncodeToString(b)
	}
	a := map[string]string{annExportNamespace: spec.namespace, annExportSecret: spec.name, AnnExportClaim: claim}
	kind := ""
	if spec.targetName != "" && spec.targetKind != export.TargetKind {
		kind = spec.targetKind // a Target's record says nothing, as those written before said
	}
	for k, v := range map[string]string{annExportFormat: spec.format, AnnExportSecretUID: string(spec.secretUID), AnnExportTarget: spec.targetName, AnnExportTargetUID: string(spec.targetUID),
		AnnExportTargetKind: kind} {
		if v != "" {
			a[k] = v
		}
	}
	want := &corev1.Secret{Type: exportRecordType,
		ObjectMeta: metav1.ObjectMeta{Name: ExportRecordName(spec.namespace, spec.name), Namespace: member.SystemNamespace, Labels: l, Annotations: a}}
	secrets := c.Kube.CoreV1().Secrets(member.SystemNamespace)
	var stored *corev1.Secret
	var err error
	switch {
	case have == nil:
		stored, err = secrets.Create(ctx, want, metav1.CreateOptions{FieldManager: member.FieldManager})
	case maps.Equal(have.sec.Labels, l) && maps.Equal(have.sec.Annotations, a):
		return have, nil
	default:
		want.ResourceVersion = have.sec.ResourceVersion
		stored, err = secrets.Update(ctx, want, metav1.UpdateOptions{FieldManager: member.FieldManager})
	}
	if err != nil {
		return nil, fmt.Errorf("recording the export in %s: %w", member.SystemNamespace, err)
	}
	r, _ := recordOf(stored)
	return &r, nil
}

// recordedExport is an export whose Secret is the very object its record names.
type recordedExport struct {
	record exportRecord
	secret *corev1.Secret
}

// ExportRecords lists the records of a provider's credentials (every provider's when providerID is ""):
// the pairing's alone (slice "" and pairingOnly), one slice's, or all of them.
func ExportRecords(ctx context.Context, c *member.Cluster, providerID, slice string, pairingOnly bool) ([]exportRecord, error) {
	sel := labels.Set{member.LabelManagedBy: member.ManagedBy}
	if providerID != "" {
		sel[LabelExportRecordOf] = providerID
	}
	l, err := c.Kube.CoreV1().Secrets(member.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String() + "," + LabelExportRecordOf})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the export records in %s: %w", member.SystemNamespace, err)
	}
	var out []exportRecord
	for i := range l.Items {
		r, ok := recordOf(&l.Items[i])
		if !ok || (slice != "" && r.slice != slice) || (slice == "" && pairingOnly && r.slice != "") {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// errHidden says that the user may not read an export's namespace (a consumer operator's rights end at
// federate-system): the export is left as it is, and its record kept.
var errHidden = errors.New("not readable with these credentials; left as it is")

// errRelabelled says that the recorded object is there (its UID) but its labels no longer name the
// record's credential: someone changed them. It is neither written nor deleted, and its record is kept,
// so that the credential in it is not forgotten.
var errRelabelled = errors.New("its labels were changed since the export wrote it; left as it is, with its record")

// leftAlone tells whether err is a recorded export this run leaves as it is, with a warning.
func leftAlone(err error) bool { return errors.Is(err, errHidden) || errors.Is(err, errRelabelled) }

// recordedExports reads the exports exportRecords names that are still what was recorded; a record whose
// Secret is gone, or was replaced by another object of the same name, is in gone (a record alone, which
// "delete export" removes); one the user may not read is reported and skipped. One list when there is no
// export, and a read per export when there are (they are few).
func recordedExports(ctx context.Context, c *member.Cluster, providerID, slice string, pairingOnly bool) (out []recordedExport, gone []exportRecord, err error) {
	records, err := ExportRecords(ctx, c, providerID, slice, pairingOnly)
	if err != nil {
		return nil, nil, err
	}
	var errs []error
	for _, r := range records {
		if r.secretUID == "" {
			// Pending (a run cut off between its writes): its claim has been readable on what it wrote, so
			// nothing is written into, or listed as, an object it owns by claim; export again to finish it.
			c.Reporter().Warn(fmt.Sprintf("export Secret %s/%s was left unfinished by an export cut off; run that export again", r.namespace, r.name))
			continue
		}
		sec, err := recordedSecret(ctx, c, r)
		switch {
		case leftAlone(err):
			c.Reporter().Warn(err.Error())
		case err != nil:
			errs = append(errs, err)
		case sec != nil:
			out = append(out, recordedExport{record: r, secret: sec})
		default:
			gone = append(gone, r)
		}
	}
	return out, gone, errors.Join(errs...)
}

// recordedSecret reads the Secret a record names; nil when it is gone or is another object than the one
// recorded.
func recordedSecret(ctx context.Context, c *member.Cluster, r exportRecord) (*corev1.Secret, error) {
	sec, err := c.Kube.CoreV1().Secrets(r.namespace).Get(ctx, r.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("export Secret %s/%s: %w", r.namespace, r.name, errHidden)
	case err != nil:
		return nil, fmt.Errorf("export Secret %s/%s: %w", r.namespace, r.name, err)
	}
	if !r.owns(sec, r.secretUID) {
		if r.secretUID != "" && sec.UID == r.secretUID {
			return nil, fmt.Errorf("export Secret %s/%s: %w", r.namespace, r.name, errRelabelled)
		}
		return nil, nil // another object under the recorded name: not ours
	}
	return sec, nil
}

// deleteSecret deletes exactly the Secret of that UID (never another one made under its name since), and
// takes "already gone" as done; servedAPIs.delete does the same for a Target or ClusterProfile.
func deleteSecret(ctx context.Context, c *member.Cluster, ns, name string, uid types.UID) error {
	return objects.IgnoreNotFound(c.Kube.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}))
}
