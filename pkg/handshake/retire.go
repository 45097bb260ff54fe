package handshake

import (
	"context"
	"errors"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// A renewal with an overlap leaves the user it renewed away bound beside the new one (IssueOptions
// KeepCurrent), so that a client holding the old credential keeps working until it reads the new one;
// whoever renewed takes it out when the overlap ends. With no controller, that is the renewing process:
// the old user is authorized no longer than the overlap it was promised, unless that process dies
// before (then the next issuance's bindings, which name the current user and the new one only, or a
// revocation, take it out).

// Retiring is a user a renewal left bound for its overlap, and where.
type Retiring struct {
	ConsumerID string
	User       string
	// Namespace is a resource slice's namespace; "" for the pairing's identity, bound in the tenant
	// namespace and every extra namespace of the consumer.
	Namespace string
}

// Retire takes a renewed-away user out of the consumer's RoleBindings, and deletes its credential
// ServiceAccount if it is a token's (its tokens then fail to authenticate). It only ever removes that one
// subject from a binding that exists: it never creates a binding, so a consumer revoked meanwhile (its
// bindings deleted) gets nothing back, and never leaves a binding without a subject. Already retired is
// done.
func Retire(ctx context.Context, c *member.Cluster, r Retiring) error {
	nss := []string{r.Namespace}
	if r.Namespace == "" {
		nss = []string{member.TenantNamespace(r.ConsumerID)}
		// Read afresh: the overlap is long past any read a renewal made early.
		sel := labels.SelectorFromSet(member.TenantLabels(r.ConsumerID)).String() + "," + member.LabelNamespaceKind + "=" + member.KindExtra
		extra, err := c.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return err
		}
		for _, ns := range extra.Items {
			nss = append(nss, ns.Name)
		}
	}
	jobs := make([]func() error, len(nss))
	for i, ns := range nss {
		jobs[i] = func() error { return unbindOne(ctx, c, ns, r) }
	}
	if err := parallel.All(jobs...); err != nil {
		return err
	}
	if sns, name, err := credential.SplitServiceAccountUser(r.User); err == nil && slices.Contains(nss, sns) && credential.IsCredentialUser(r.User, sns) {
		return objects.IgnoreNotFound(c.Kube.CoreV1().ServiceAccounts(sns).Delete(ctx, name, metav1.DeleteOptions{}))
	}
	return nil
}

// unbindOne removes r.User from the consumer's RoleBinding in ns, under the binding's resourceVersion
// (a concurrent change, such as a revocation's deletion, is read again).
func unbindOne(ctx context.Context, c *member.Cluster, ns string, r Retiring) error {
	rbs := c.Kube.RbacV1().RoleBindings(ns)
	want := credential.SubjectFor(r.User)
	for range 5 {
		rb, err := rbs.Get(ctx, member.RoleBindingName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil // revoked, or the namespace is gone: nothing to take
		}
		if err != nil {
			return err
		}
		if rb.Labels[member.LabelRemoteClusterID] != r.ConsumerID {
			return nil // not the consumer's binding
		}
		kept := slices.DeleteFunc(slices.Clone(rb.Subjects), func(s rbacv1.Subject) bool { return s == want })
		if len(kept) == len(rb.Subjects) || len(kept) == 0 {
			return nil // retired already; or the one user left, which is not renewed away
		}
		rb.Subjects = kept
		_, err = rbs.Update(ctx, rb, metav1.UpdateOptions{FieldManager: member.FieldManager})
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return errors.New("the RoleBinding " + ns + "/" + member.RoleBindingName + " kept changing while a renewed-away user was taken out of it")
}
