package handshake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/federate-dev/kubectl-federate/pkg/export"
)

// An export's Secret lives in a namespace other people write in (argocd, flux-system, a team's own), so
// its labels prove nothing: anyone who may create a Secret there can label one as an export. Were labels
// trusted, a renewal would write the new credential into that Secret and hand it to whoever made it. So
// every export is recorded in federate-system, which only this tool's users write, by the exact objects it
// wrote (namespace, name and UID): only a recorded object is ever rewritten, adopted or deleted. A Secret
// deleted and made again under the same name has another UID, and is a stranger.
const (
	// labelExportRecordOf and labelExportRecordSlice select the records of a provider's credentials. They
	// are not the credential labels (remote cluster ID, role), so that nothing that lists a pairing's
	// Secrets in federate-system mistakes a record for a credential.
	labelExportRecordOf    = "federate.dev/export-record-of"
	labelExportRecordSlice = "federate.dev/export-record-slice"
	annExportNamespace     = "federate.dev/export-namespace"
	annExportSecret        = "federate.dev/export-secret"     //nolint:gosec // an annotation key, not a credential
	annExportSecretUID     = "federate.dev/export-secret-uid" //nolint:gosec // an annotation key, not a credential
	annExportTargetUID     = "federate.dev/export-target-uid"
	// exportRecordType marks a record: it holds no secret, but lives beside the credentials it points
	// at, under the same access.
	exportRecordType corev1.SecretType = "federate.dev/export-record"
)

// exportRecord is one export as federate-system records it.
type exportRecord struct {
	sec       *corev1.Secret
	namespace string
	name      string
	secretUID types.UID
	targetUID types.UID
}

// exportRecordName names the record of the export Secret ns/name: one record per Secret, whatever it
// exports, so that a second export under that name finds the first.
func exportRecordName(ns, name string) string {
	sum := sha256.Sum256([]byte(ns + "/" + name))
	return "export-" + hex.EncodeToString(sum[:10])
}

func recordOf(s *corev1.Secret) exportRecord {
	return exportRecord{sec: s, namespace: s.Annotations[annExportNamespace], name: s.Annotations[annExportSecret],
		secretUID: types.UID(s.Annotations[annExportSecretUID]), targetUID: types.UID(s.Annotations[annExportTargetUID])}
}

// getExportRecord reads the record of the export Secret ns/name; nil when there is none.
func (c *Cluster) getExportRecord(ctx context.Context, ns, name string) (*exportRecord, error) {
	s, err := c.Kube.CoreV1().Secrets(SystemNamespace).Get(ctx, exportRecordName(ns, name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the record of export %s/%s: %w", ns, name, err)
	}
	if s.Type != exportRecordType || s.Labels[LabelManagedBy] != ManagedBy {
		return nil, nil
	}
	r := recordOf(s)
	if r.namespace != ns || r.name != name {
		return nil, nil
	}
	return &r, nil
}

// recordExport writes (or brings up to date) the record of an export just written.
func (c *Cluster) recordExport(ctx context.Context, have *exportRecord, providerID, slice string, sec *corev1.Secret, targetUID types.UID) error {
	l := map[string]string{LabelManagedBy: ManagedBy, labelExportRecordOf: providerID}
	if slice != "" {
		l[labelExportRecordSlice] = slice
	}
	a := map[string]string{annExportNamespace: sec.Namespace, annExportSecret: sec.Name, annExportSecretUID: string(sec.UID)}
	if targetUID != "" {
		a[annExportTargetUID] = string(targetUID)
	}
	want := &corev1.Secret{Type: exportRecordType,
		ObjectMeta: metav1.ObjectMeta{Name: exportRecordName(sec.Namespace, sec.Name), Namespace: SystemNamespace, Labels: l, Annotations: a}}
	secrets := c.Kube.CoreV1().Secrets(SystemNamespace)
	if have == nil {
		_, err := secrets.Create(ctx, want, metav1.CreateOptions{FieldManager: FieldManager})
		return err
	}
	if maps.Equal(have.sec.Labels, l) && maps.Equal(have.sec.Annotations, a) {
		return nil
	}
	want.ResourceVersion = have.sec.ResourceVersion
	_, err := secrets.Update(ctx, want, metav1.UpdateOptions{FieldManager: FieldManager})
	return err
}

// recordedExport is an export whose Secret is the very object its record names.
type recordedExport struct {
	record exportRecord
	secret *corev1.Secret
}

// exportRecords lists the records of a provider's credentials (every provider's when providerID is ""):
// the pairing's alone (slice "" and pairingOnly), one slice's, or all of them.
func (c *Cluster) exportRecords(ctx context.Context, providerID, slice string, pairingOnly bool) ([]exportRecord, error) {
	sel := labels.Set{LabelManagedBy: ManagedBy}
	if providerID != "" {
		sel[labelExportRecordOf] = providerID
	}
	l, err := c.Kube.CoreV1().Secrets(SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String() + "," + labelExportRecordOf})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the export records in %s: %w", SystemNamespace, err)
	}
	var out []exportRecord
	for i := range l.Items {
		rs := &l.Items[i]
		s := rs.Labels[labelExportRecordSlice]
		if rs.Type != exportRecordType || (slice != "" && s != slice) || (slice == "" && pairingOnly && s != "") {
			continue
		}
		out = append(out, recordOf(rs))
	}
	return out, nil
}

// recordedExports reads the exports exportRecords names that are still what was recorded: a record whose
// Secret is gone, or was replaced by another object of the same name, yields nothing. One list when there
// is no export, and a read per export when there are (they are few).
func (c *Cluster) recordedExports(ctx context.Context, providerID, slice string, pairingOnly bool) ([]recordedExport, error) {
	records, err := c.exportRecords(ctx, providerID, slice, pairingOnly)
	if err != nil {
		return nil, err
	}
	var out []recordedExport
	var errs []error
	for _, r := range records {
		sec, err := c.recordedSecret(ctx, r)
		if err != nil {
			errs = append(errs, err)
		} else if sec != nil {
			out = append(out, recordedExport{record: r, secret: sec})
		}
	}
	return out, errors.Join(errs...)
}

// recordedSecret reads the Secret a record names; nil when it is gone or is another object than the one
// recorded.
func (c *Cluster) recordedSecret(ctx context.Context, r exportRecord) (*corev1.Secret, error) {
	sec, err := c.Kube.CoreV1().Secrets(r.namespace).Get(ctx, r.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("export Secret %s/%s: %w", r.namespace, r.name, err)
	}
	if sec.UID != r.secretUID || sec.Labels[export.LabelFormat] == "" {
		return nil, nil // another object under the recorded name: not ours
	}
	return sec, nil
}
