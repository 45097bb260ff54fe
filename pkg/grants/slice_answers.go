package grants

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// SliceRemoved is the phase a consumer shows for a slice whose request its provider no longer holds: the
// provider's administrator deleted it (and with it any grant), or the request was withdrawn elsewhere.
const SliceRemoved = "Removed"

// reasonRemoved is the reason a consumer shows with SliceRemoved.
const reasonRemoved = "the provider holds no request for this slice any more (deleted there): delete resourceslice here to forget it"

// WithProviderAnswers (consumer) shows held slices as their providers see them now. A consumer records
// an answer only when it imports one, so a denial, or a deletion by the provider's administrator, would
// otherwise read Pending (or Imported) here for ever. Each provider's requests are read once, through the
// pairing, concurrently; nothing is written (a listing changes nothing). A provider that cannot be read
// leaves its slices as last recorded, and is returned, with why, for the caller to warn about.
func WithProviderAnswers(ctx context.Context, c *member.Cluster, held []SliceInfo) ([]SliceInfo, map[string]error, error) {
	if len(held) == 0 {
		return held, nil, nil
	}
	self, err := c.Load(ctx)
	if err != nil {
		return nil, nil, err
	}
	byProvider := map[string][]int{}
	for i, s := range held {
		if s.Phase == SlicePending || s.Phase == SliceImported || s.Phase == SliceAccepted {
			byProvider[s.ProviderID] = append(byProvider[s.ProviderID], i)
		}
	}
	out := append([]SliceInfo(nil), held...)
	failed := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for providerID, idx := range byProvider {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers, err := providerAnswers(ctx, c, self.ClusterID, providerID)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed[providerID] = err
				return
			}
			for _, i := range idx {
				out[i] = withAnswer(out[i], answers[out[i].Name], self.ClusterID)
			}
		}()
	}
	wg.Wait()
	if len(failed) == 0 {
		failed = nil
	}
	return out, failed, nil
}

// providerAnswers reads this consumer's requests on providerID through the pairing, by slice name.
func providerAnswers(ctx context.Context, c *member.Cluster, selfID, providerID string) (map[string]*v1alpha1.ResourceSlice, error) {
	p, err := handshake.ViaPairing(ctx, c, providerID)
	if err != nil {
		return nil, err
	}
	l, err := p.Dynamic.Resource(v1alpha1.ResourceSliceGVR).Namespace(member.TenantNamespace(selfID)).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing this cluster's requests there: %w", err)
	}
	answers := map[string]*v1alpha1.ResourceSlice{}
	for i := range l.Items {
		s := &v1alpha1.ResourceSlice{}
		if objects.FromUnstructured(&l.Items[i], s) == nil {
			answers[l.Items[i].GetName()] = s
		}
	}
	return answers, nil
}

// withAnswer is a held slice as its provider's copy shows it: removed when there is none; denied, with
// the provider's reason, or accepted and waiting for its import, when the provider answered a request
// this cluster has not imported an answer to. A copy that is not this slice's (another consumer, another
// name) changes nothing.
func withAnswer(s SliceInfo, answer *v1alpha1.ResourceSlice, selfID string) SliceInfo {
	if answer == nil {
		s.Phase, s.Reason = SliceRemoved, reasonRemoved
		return s
	}
	if checkSliceAnswer(answer, selfID, s.ProviderID, s.Name) != nil || s.Phase == SliceImported {
		return s
	}
	switch slicePhase(answer) {
	case SliceDenied:
		s.Phase, s.Reason = SliceDenied, answer.Status.Reason
	case SliceAccepted:
		s.Phase, s.Reason = SliceAccepted, "granted by the provider: import resourceslice "+s.Name+" to use it"
		s.Granted = answer.Status.Granted
	}
	return s
}
