package member

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LockPair takes a Lease in the provider's federate-system namespace for one consumer, so concurrent
// authenticate runs for the same pair take turns instead of interleaving their steps. A lease left by a
// run that died expires after ttl. The returned function releases it; contended tells whether another
// run held it first (so what was read before it was taken may predate that run's writes).
func (c *Cluster) LockPair(ctx context.Context, consumerID string, ttl time.Duration) (release func(), contended bool, err error) {
	leases := c.Kube.CoordinationV1().Leases(SystemNamespace)
	name := "authenticate-" + consumerID
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s/%d/%s", host, os.Getpid(), rand.String(6))
	seconds := int32(min(max(ttl/time.Second, 1), 24*3600)) //nolint:gosec // bounded to [1, 86400] just before
	waited := false
	for {
		now := metav1.NewMicroTime(c.CurrentTime())
		lease := &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: SystemNamespace, Labels: TenantLabels(consumerID)},
			Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, AcquireTime: &now, RenewTime: &now},
		}
		created, err := leases.Create(ctx, lease, metav1.CreateOptions{})
		if err == nil {
			var once sync.Once
			release := func() {
				once.Do(func() {
					dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
					defer cancel()
					_ = leases.Delete(dctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &created.UID}})
				})
			}
			return release, contended, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, false, fmt.Errorf("taking Lease %s/%s: %w", SystemNamespace, name, err)
		}
		contended = true
		held, err := leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		if expired(held, c.CurrentTime()) || holderDead(held) {
			// Its holder died: remove exactly that lease and try again.
			err := leases.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &held.UID, ResourceVersion: &held.ResourceVersion}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return nil, false, err
			}
			continue
		}
		if !waited {
			c.Reporter().Info("Another authenticate for this pair is running; waiting for it to finish")
			waited = true
		}
		wctx, cancel := context.WithDeadline(ctx, leaseExpiry(held))
		err = c.WaitDeleted(wctx, Deletable[*coordv1.Lease](leases), name, held.ResourceVersion)
		cancel()
		if err != nil && ctx.Err() != nil {
			return nil, false, fmt.Errorf("waiting for the other authenticate run: %w", err)
		}
	}
}

func leaseExpiry(l *coordv1.Lease) time.Time {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return time.Time{}
	}
	return l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
}

func expired(l *coordv1.Lease, now time.Time) bool { return now.After(leaseExpiry(l)) }

// holderDead tells whether the lease was taken by a process of this host that no longer runs (an
// interrupted run), so the next run need not wait for the lease to expire.
func holderDead(l *coordv1.Lease) bool {
	if l.Spec.HolderIdentity == nil || runtime.GOOS == "windows" {
		return false
	}
	parts := strings.Split(*l.Spec.HolderIdentity, "/")
	host, _ := os.Hostname()
	if len(parts) != 3 || parts[0] != host {
		return false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid == os.Getpid() {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	return p.Signal(syscall.Signal(0)) != nil
}
