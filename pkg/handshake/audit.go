package handshake

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Reasons of the audit Events.
const (
	EventIssued     = "Issued"     // a pairing's first identity
	EventRenewed    = "Renewed"    // a pairing's identity issued again
	EventImported   = "Imported"   // a consumer stored an identity
	EventRevoked    = "Revoked"    // revoke
	EventGranted    = "Granted"    // a resource slice or an extra namespace
	EventCordoned   = "Cordoned"   // cordon tenant
	EventUncordoned = "Uncordoned" // uncordon tenant
	EventDrained    = "Drained"    // drain tenant
	EventDenied     = "Denied"     // a request refused (deny)
)

// ReportingController names kubectl federate in its Events.
const ReportingController = "federate.dev/kubectl-federate"

// operator returns the user this process acts as on the cluster, from a SelfSubjectReview, once.
func operator(ctx context.Context, c *member.Cluster) string {
	c.OperatorOnce.Do(func() {
		r, err := c.Kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			c.OperatorUser = "unknown (SelfSubjectReview: " + err.Error() + ")"
			return
		}
		c.OperatorUser = r.Status.UserInfo.Username
	})
	return c.OperatorUser
}

// StartOperator sends the operator's SelfSubjectReview in the background, so that the Events recorded at
// the end of a run need not wait for it.
func StartOperator(ctx context.Context, c *member.Cluster) {
	go operator(ctx, c)
}

// Audit records what this process just did to a pairing as an Event regarding obj (a Tenant on a
// provider, an Identity on a consumer), on this cluster: the action, the operator's user and the
// credential's user and expiry when there is one. It is the trail "status --history" and "kubectl get
// events" show, for as long as the API server keeps Events (its --event-ttl, one hour by default). An
// Event lives in its object's namespace (the API server requires it): a Tenant's in the tenant namespace,
// where the tenant reads it, operator's name included. A failure to record is reported as a warning: what
// it records has already happened.
func Audit(ctx context.Context, c *member.Cluster, obj auditObject, reason, note string, cred *Credential) {
	msg := note + "; by " + operator(ctx, c)
	if cred != nil && cred.User != "" {
		msg += "; credential user " + cred.User
		if !cred.NotAfter.IsZero() {
			msg += ", expires " + cred.NotAfter.UTC().Format(time.RFC3339)
		}
	}
	host, _ := os.Hostname()
	now := c.CurrentTime()
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			// As client-go's recorders name them; the API server refuses a generateName ending in a dot.
			Name:      fmt.Sprintf("%s.%x", obj.name, now.UnixNano()),
			Namespace: obj.namespace,
			Labels:    map[string]string{member.LabelManagedBy: member.ManagedBy, member.LabelRemoteClusterID: obj.remoteID, member.LabelRole: obj.role},
		},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: ReportingController,
		ReportingInstance:   truncateTo(host, 128),
		Action:              reason,
		Reason:              reason,
		Regarding: corev1.ObjectReference{APIVersion: v1alpha1.APIVersion, Kind: obj.kind, Namespace: obj.namespace, Name: obj.name,
			UID: obj.uid},
		Note: truncateTo(msg, 1024),
		Type: corev1.EventTypeNormal,
	}
	if _, err := c.Kube.EventsV1().Events(obj.namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		c.Reporter().Warn(fmt.Sprintf("The %s was not recorded as an Event in %s: %v", strings.ToLower(reason), obj.namespace, err))
	}
}

// auditObject is what an audit Event is about.
type auditObject struct {
	kind, namespace, name, remoteID, role string
	uid                                   types.UID
}

// TenantObject is a consumer's Tenant on this provider.
func TenantObject(consumerID string) auditObject {
	return auditObject{kind: v1alpha1.TenantKind, namespace: member.TenantNamespace(consumerID), name: consumerID, remoteID: consumerID, role: member.RoleProvider}
}

// IdentityObject is an Identity this consumer holds.
func IdentityObject(providerID, name string) auditObject {
	return auditObject{kind: v1alpha1.IdentityKind, namespace: member.SystemNamespace, name: name, remoteID: providerID, role: member.RoleConsumer}
}

func truncateTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// HistoryEntry is one audit Event.
type HistoryEntry struct {
	// Time is when the API server stored the Event, by its clock (whole seconds), or, if it says nothing,
	// the Event's own time.
	Time            time.Time `json:"time"`
	RemoteClusterID string    `json:"remoteClusterID"`
	Role            string    `json:"role"`
	Kind            string    `json:"kind"`
	Name            string    `json:"name"`
	Reason          string    `json:"reason"`
	Note            string    `json:"note"`

	order uint64 // the Event's resourceVersion, when it is a number
}

// History lists the audit Events this cluster still keeps, oldest first, in the order the API server
// stored them. Their own times cannot give that order: each process sets an Event's time from the API
// server's clock as it measured it from the Date headers, which have whole seconds, so two commands run
// within a second of each other can stamp them the wrong way round (cordon, uncordon, then drain listed
// drain's cordon before the uncordon). The order of storage is the Events' resourceVersions, which etcd
// assigns in increasing order (one store holds every Event); should a server give versions that are not
// numbers, the server's creation times, then the Events' own, order them instead.
func History(ctx context.Context, c *member.Cluster) ([]HistoryEntry, error) {
	sel := labels.SelectorFromSet(labels.Set{member.LabelManagedBy: member.ManagedBy}).String()
	list, err := c.Kube.EventsV1().Events("").List(ctx, metav1.ListOptions{LabelSelector: sel})
	if apierrors.IsForbidden(err) {
		// A consumer's operator may read federate-system only, where a consumer's Events are.
		list, err = c.Kube.EventsV1().Events(member.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	}
	if err != nil {
		return nil, fmt.Errorf("listing Events: %w", err)
	}
	out := []HistoryEntry{}
	numbered := true
	var eventTimes []time.Time
	for _, e := range list.Items {
		if e.ReportingController != ReportingController {
			continue
		}
		h := HistoryEntry{Time: e.CreationTimestamp.UTC(), RemoteClusterID: e.Labels[member.LabelRemoteClusterID], Role: e.Labels[member.LabelRole],
			Kind: e.Regarding.Kind, Name: e.Regarding.Name, Reason: e.Reason, Note: e.Note}
		if e.CreationTimestamp.IsZero() {
			h.Time = e.EventTime.UTC()
		}
		if h.order, err = strconv.ParseUint(e.ResourceVersion, 10, 64); err != nil {
			numbered = false
		}
		out = append(out, h)
		eventTimes = append(eventTimes, e.EventTime.UTC())
	}
	if numbered {
		slices.SortStableFunc(out, func(a, b HistoryEntry) int { return cmp.Compare(a.order, b.order) })
		return out, nil
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Or(out[a].Time.Compare(out[b].Time), eventTimes[a].Compare(eventTimes[b]))
	})
	sorted := make([]HistoryEntry, len(out))
	for i, j := range idx {
		sorted[i] = out[j]
	}
	return sorted, nil
}
