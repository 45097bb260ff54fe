package handshake

import (
	"context"
	"fmt"

	"github.com/federate-dev/kubectl-federate/pkg/export"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// One export is removed the way it was written: named by the same format, credential, name and namespace,
// it is found by its record (never by labels, which anyone who writes Secrets there can set), and only the
// objects the record names go, each by its UID. A Secret deleted by hand leaves the record, and the
// Target or ClusterProfile that points at it; those are what the removal then deletes.

// ExportKindOf is the kind of the second object a format writes, "" for a Secret alone.
func ExportKindOf(format string) string {
	switch format {
	case export.FormatAdmiralty:
		return export.TargetKind
	case export.FormatClusterProfile:
		return export.ClusterProfileKind
	}
	return ""
}

// format is the record's format as far as the record tells it (the Secret's label says it too): the one
// recorded; in a record written before formats were, the formats that write a second object are known by
// its kind, and the others write a Secret alone, which such a record cannot tell apart ("").
func (r exportRecord) format() string {
	switch {
	case r.recordedFormat != "":
		return r.recordedFormat
	case r.targetName == "":
		return ""
	case r.kind() == export.ClusterProfileKind:
		return export.FormatClusterProfile
	}
	return export.FormatAdmiralty
}

// RemovedExport is what DeleteExport removed.
type RemovedExport struct {
	// Deleted are the export's objects deleted: its Target or ClusterProfile first, then its Secret.
	Deleted []ExportedObject
	// Namespace and Secret name the export's Secret; SecretGone says it was no longer there (deleted by
	// hand, or another object made under its name, which is left alone): the record went with what
	// remained.
	Namespace, Secret string
	SecretGone        bool
	// Record is the name of the record deleted, in federate-system.
	Record string
}

// DeleteExport removes one export of a credential this cluster holds: the one o names (format, provider,
// slice, name, namespace), found by its record in federate-system. Its Target or ClusterProfile goes
// first (nothing is left pointing at a Secret anyone may make again), then its Secret, then the record;
// each exactly the object recorded, never another made under its name. An export this cluster has no
// record of, or whose record is another credential's or another format's, is a NotFoundError naming the
// exports of that credential. Nothing is deleted when the export cannot be read (its namespace hidden from
// these credentials) or its labels were changed since: the error says so, and the record stays.
func DeleteExport(ctx context.Context, c *member.Cluster, o ExportOptions) (*RemovedExport, error) {
	name := export.SecretName(o.Format, o.name())
	rec, err := getExportRecord(ctx, c, o.Namespace, name)
	if err != nil {
		return nil, err
	}
	if rec == nil || rec.providerID != o.ProviderID || rec.slice != o.Slice || !fitsFormat(*rec, o.Format) {
		return nil, exportNotFound(ctx, c, o, name, rec)
	}
	sec, err := recordedSecret(ctx, c, *rec)
	if err != nil {
		return nil, fmt.Errorf("%w; nothing was deleted", err)
	}
	if sec != nil && sec.Labels[export.LabelFormat] != o.Format {
		return nil, exportNotFound(ctx, c, o, name, rec)
	}
	out := &RemovedExport{Namespace: o.Namespace, Secret: name, SecretGone: sec == nil}
	if rec.targetName != "" {
		deleted, err := deleteExportTarget(ctx, c, newServedAPIs(c), *rec)
		if err != nil {
			return nil, fmt.Errorf("%w; nothing was deleted", err)
		}
		if deleted {
			out.Deleted = append(out.Deleted, ExportedObject{Kind: rec.kind(), Namespace: o.Namespace, Name: rec.targetName, Action: "deleted"})
		}
	}
	if sec != nil {
		if err := deleteSecret(ctx, c, sec.Namespace, sec.Name, sec.UID); err != nil {
			return out, fmt.Errorf("export Secret %s/%s: %w (its record is kept: run this again)", sec.Namespace, sec.Name, err)
		}
		out.Deleted = append(out.Deleted, ExportedObject{Kind: "Secret", Namespace: o.Namespace, Name: name, Action: "deleted"})
	}
	if err := deleteSecret(ctx, c, member.SystemNamespace, rec.sec.Name, rec.sec.UID); err != nil {
		return out, fmt.Errorf("the record of export Secret %s/%s in %s: %w", o.Namespace, name, member.SystemNamespace, err)
	}
	out.Record = rec.sec.Name
	return out, nil
}

// fitsFormat tells whether a record can be the export of format: the format it records; in a record
// written before formats were, one that writes a second object records its kind, one that does not records
// none. (The kubeconfig, admiralty and clusterprofile formats all name their Secret NAME-kubeconfig.)
func fitsFormat(r exportRecord, format string) bool {
	if r.recordedFormat != "" {
		return r.recordedFormat == format
	}
	want := ExportKindOf(format)
	if r.targetName == "" {
		return want == ""
	}
	return r.kind() == want
}

// exportNotFound is the NotFoundError of an export o names, listing the exports of the same credential
// as namespace/secret; rec, if any, is a record under that name that is not this export.
func exportNotFound(ctx context.Context, c *member.Cluster, o ExportOptions, name string, rec *exportRecord) error {
	where := "for " + describeCredential(o.ProviderID, o.Slice)
	switch {
	case rec != nil && (rec.providerID != o.ProviderID || rec.slice != o.Slice):
		where += fmt.Sprintf(" (the Secret %s/%s is an export of %s)", o.Namespace, name, describeCredential(rec.providerID, rec.slice))
	case rec != nil:
		where += fmt.Sprintf(" (the Secret %s/%s is not a %s export)", o.Namespace, name, o.Format)
	default:
		where += fmt.Sprintf(" (no record of an export Secret %s/%s in %s)", o.Namespace, name, member.SystemNamespace)
	}
	records, err := ExportRecords(ctx, c, o.ProviderID, o.Slice, o.Slice == "")
	if err != nil {
		return err
	}
	known := make([]string, 0, len(records))
	for _, r := range records {
		if r.namespace != o.Namespace || r.name != name { // that one is not it (said above), whatever it is
			known = append(known, r.namespace+"/"+r.name)
		}
	}
	return NotFound("export", o.Namespace+"/"+name, where, known)
}
