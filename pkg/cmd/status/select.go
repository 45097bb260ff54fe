package status

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/views"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/lifecycle"
	"github.com/federate-dev/kubectl-federate/pkg/status"
)

// selectReport keeps, of a report, the credentials and exports --remote-cluster-id and -l select, proves
// the held ones among them with --check (only those shown are dialled), and orders them by --sort-by (over
// what the check found too). It returns them with the items -o prints for them: credentials first, then
// exports, unless --sort-by orders them together. A --remote-cluster-id of no pairing of this cluster is
// NotFound, naming the remote clusters it has.
func (o *Options) selectReport(ctx context.Context, r *status.Report) (*status.Report, []*unstructured.Unstructured, error) {
	if err := o.knownRemote(remotesOf(r)); err != nil {
		return nil, nil, err
	}
	kept := &status.Report{ClusterID: r.ClusterID, Credentials: []status.CredentialState{}}
	for i := range r.Credentials {
		s := &r.Credentials[i]
		u, err := views.CredentialObject(s)
		if err != nil {
			return nil, nil, err
		}
		if o.selected(s.RemoteClusterID, u) {
			kept.Credentials = append(kept.Credentials, *s)
		}
	}
	for i := range r.Exports {
		e := &r.Exports[i]
		u, err := views.ExportObject(e)
		if err != nil {
			return nil, nil, err
		}
		if o.selected(e.RemoteClusterID, u) {
			kept.Exports = append(kept.Exports, *e)
		}
	}
	if o.Check {
		if err := status.Check(ctx, o.cluster, kept.Credentials); err != nil {
			return nil, nil, err
		}
	}
	objs := make([]*unstructured.Unstructured, 0, len(kept.Credentials)+len(kept.Exports))
	for i := range kept.Credentials {
		u, err := views.CredentialObject(&kept.Credentials[i])
		if err != nil {
			return nil, nil, err
		}
		objs = append(objs, u)
	}
	for i := range kept.Exports {
		u, err := views.ExportObject(&kept.Exports[i])
		if err != nil {
			return nil, nil, err
		}
		objs = append(objs, u)
	}
	order, err := o.List.Order(objs)
	if err != nil || order == nil {
		return kept, objs, err
	}
	out := &status.Report{ClusterID: r.ClusterID, Credentials: []status.CredentialState{}}
	sorted := make([]*unstructured.Unstructured, len(objs))
	for i, j := range order {
		sorted[i] = objs[j]
		if j < len(kept.Credentials) {
			out.Credentials = append(out.Credentials, kept.Credentials[j])
		} else {
			out.Exports = append(out.Exports, kept.Exports[j-len(kept.Credentials)])
		}
	}
	return out, sorted, nil
}

// selected tells whether an item of remote, with its labels in u, is shown.
func (o *Options) selected(remote string, u *unstructured.Unstructured) bool {
	return (o.RemoteClusterID == "" || remote == o.RemoteClusterID) && o.List.Matches(u.GetLabels())
}

// knownRemote is nil when --remote-cluster-id is not given or names one of known, and kubectl's NotFound
// otherwise (with "did you mean" for a near miss).
func (o *Options) knownRemote(known []string) error {
	if o.RemoteClusterID == "" || slices.Contains(known, o.RemoteClusterID) {
		return nil
	}
	return fmt.Errorf("--remote-cluster-id: %w", handshake.NotFound("remote cluster", o.RemoteClusterID, "among the pairings of this cluster", known))
}

func remotesOf(r *status.Report) []string {
	var out []string
	for _, s := range r.Credentials {
		out = append(out, s.RemoteClusterID)
	}
	for _, e := range r.Exports {
		out = append(out, e.RemoteClusterID)
	}
	return out
}

// selectHistory keeps the audit records --remote-cluster-id and -l select, in --sort-by order. A remote
// cluster is known when a record names it or when it is paired with this one now (its records may have
// outlived the API server's --event-ttl).
func (o *Options) selectHistory(ctx context.Context, entries []handshake.HistoryEntry) ([]handshake.HistoryEntry, []*unstructured.Unstructured, error) {
	if o.RemoteClusterID != "" && !slices.ContainsFunc(entries, func(e handshake.HistoryEntry) bool { return e.RemoteClusterID == o.RemoteClusterID }) {
		info, err := lifecycle.Pairings(ctx, o.cluster)
		if err != nil {
			return nil, nil, err
		}
		var known []string
		for _, e := range entries {
			known = append(known, e.RemoteClusterID)
		}
		for _, t := range info.Tenants {
			known = append(known, t.ConsumerID)
		}
		for _, i := range info.Identities {
			known = append(known, i.ProviderID)
		}
		if err := o.knownRemote(known); err != nil {
			return nil, nil, err
		}
	}
	var kept []handshake.HistoryEntry
	var objs []*unstructured.Unstructured
	for i := range entries {
		u, err := views.HistoryObject(&entries[i])
		if err != nil {
			return nil, nil, err
		}
		if o.selected(entries[i].RemoteClusterID, u) {
			kept, objs = append(kept, entries[i]), append(objs, u)
		}
	}
	order, err := o.List.Order(objs)
	if err != nil || order == nil {
		return kept, objs, err
	}
	sorted := make([]handshake.HistoryEntry, len(kept))
	sortedObjs := make([]*unstructured.Unstructured, len(objs))
	for i, j := range order {
		sorted[i], sortedObjs[i] = kept[j], objs[j]
	}
	return sorted, sortedObjs, nil
}
