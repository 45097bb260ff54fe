package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/federate-dev/kubectl-federate/pkg/kube"

	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Constrained impersonation (KEP-5284; alpha in 1.35, beta and on by default since 1.36) lets RBAC say
// not only whom a user may impersonate but what it may do while impersonating: impersonate:user-info on
// the target's users, groups and uids (authentication.k8s.io), and impersonate-on:user-info:<verb> on the
// resources of the request. The API server then checks the target's own rights as well, so an exchange
// credential gets exactly its scope intersected with the target's rights, enforced with no controller.
// A provider may not have it (an older minor, or the feature gate off), and a role holding the new verbs
// means nothing there, so support is proven, never assumed: a probe identity that holds only the new
// verbs for one harmless read tries that read while impersonating.

// Modes of an exchange credential.
const (
	ModeConstrained   = "Constrained"
	ModeUnconstrained = "Unconstrained"
)

// ErrProbe is returned when support could not be determined (the probe could not run).
var ErrProbe = errors.New("could not find out whether this cluster honours constrained impersonation")

// ProbeName prefixes the probe's ServiceAccount, ClusterRole and ClusterRoleBinding (with a random suffix,
// so concurrent runs never share them).
const ProbeName = "federate-impersonation-probe-"

// ConstrainedImpersonation (provider) finds out, once per process, whether this cluster honours
// constrained impersonation. The probe makes, in federate-system, a ServiceAccount that may only
// impersonate (impersonate:user-info) one made-up user, only to read (impersonate-on:user-info:get) the
// cluster record ConfigMap, which that user may read; once the authorizer agrees, it asks for a token and
// reads the ConfigMap as that user. Read: the cluster enforces the new verbs. Forbidden: it does not (only
// the legacy impersonate verb counts there). Everything the probe made is deleted before it returns.
func ConstrainedImpersonation(ctx context.Context, c *member.Cluster) (member.ImpersonationSupport, error) {
	if c.Impersonation != nil {
		return *c.Impersonation, nil
	}
	if c.Config == nil {
		return member.ImpersonationSupport{}, fmt.Errorf("%w: no connection details to send the probe with", ErrProbe)
	}
	if c.DryRun {
		// The probe acts as a ServiceAccount it creates, with a token it requests: none exists in a dry run.
		return member.ImpersonationSupport{}, &member.DryRunStop{At: "the constrained-impersonation probe",
			Why: "the probe needs a ServiceAccount token, which a dry run does not obtain, and what is granted depends on its answer"}
	}
	version := "unknown"
	if v, err := c.Kube.Discovery().ServerVersion(); err == nil {
		version = v.GitVersion
	}
	got, err := probeImpersonation(ctx, c, version)
	if err != nil {
		return member.ImpersonationSupport{}, err
	}
	c.Impersonation = &got
	return got, nil
}

func probeImpersonation(ctx context.Context, c *member.Cluster, version string) (member.ImpersonationSupport, error) {
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return member.ImpersonationSupport{}, err
	}
	name := ProbeName + hex.EncodeToString(suffix)
	user := member.UserPrefix + name
	defer deleteProbe(ctx, c, name)
	token, err := setUpProbe(ctx, c, name, user)
	if err != nil {
		return member.ImpersonationSupport{}, fmt.Errorf("%w: setting up the probe: %w", ErrProbe, err)
	}
	if err := waitProbeAllowed(ctx, c, credential.ServiceAccountUser(member.SystemNamespace, name), user); err != nil {
		return member.ImpersonationSupport{}, fmt.Errorf("%w: %w", ErrProbe, err)
	}
	return readAsProbe(ctx, c, token, user, version)
}

// setUpProbe makes the probe's ServiceAccount (and a token of it), its ClusterRole (impersonate user, and
// only to get the cluster record) and the binding of both the ServiceAccount and the user, all at once.
func setUpProbe(ctx context.Context, c *member.Cluster, name, user string) (string, error) {
	labels := map[string]string{member.LabelManagedBy: member.ManagedBy}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: member.SystemNamespace, Labels: labels}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"users"}, Verbs: []string{"impersonate:user-info"}, ResourceNames: []string{user}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"impersonate-on:user-info:get", "get"}, ResourceNames: []string{member.ClusterConfigMap}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: member.SystemNamespace, Name: name}, credential.SubjectFor(user)},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}
	var token string
	err := parallel.All(
		func() error {
			if _, err := c.Kube.CoreV1().ServiceAccounts(member.SystemNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
				return err
			}
			seconds := int64(600) // the least the API server issues
			tr, err := c.Kube.CoreV1().ServiceAccounts(member.SystemNamespace).CreateToken(ctx, name,
				&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
			if err == nil {
				token = tr.Status.Token
			}
			return err
		},
		func() error {
			_, err := c.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
			return err
		},
	)
	return token, err
}

// deleteProbe deletes everything the probe made, also when the run ran out of time, so on a context of
// its own.
func deleteProbe(ctx context.Context, c *member.Cluster, name string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*member.CleanupTimeout)
	defer cancel()
	_ = parallel.All(
		func() error {
			return objects.IgnoreNotFound(c.Kube.CoreV1().ServiceAccounts(member.SystemNamespace).Delete(cctx, name, metav1.DeleteOptions{}))
		},
		func() error {
			return objects.IgnoreNotFound(c.Kube.RbacV1().ClusterRoleBindings().Delete(cctx, name, metav1.DeleteOptions{}))
		},
		func() error {
			return objects.IgnoreNotFound(c.Kube.RbacV1().ClusterRoles().Delete(cctx, name, metav1.DeleteOptions{}))
		},
	)
}

// waitProbeAllowed waits until the authorizer, which sees new RBAC through a cache, allows all three
// checks the constrained path makes: the probe means something only then.
func waitProbeAllowed(ctx context.Context, c *member.Cluster, saUser, user string) error {
	return parallel.All(
		func() error {
			return waitAllowed(ctx, c, saUser, nil, authzv1.ResourceAttributes{Verb: "impersonate:user-info", Group: "authentication.k8s.io", Resource: "users", Name: user})
		},
		func() error {
			return waitAllowed(ctx, c, saUser, nil, authzv1.ResourceAttributes{Namespace: member.SystemNamespace, Verb: "impersonate-on:user-info:get", Resource: "configmaps", Name: member.ClusterConfigMap})
		},
		func() error {
			return waitAllowed(ctx, c, user, nil, authzv1.ResourceAttributes{Namespace: member.SystemNamespace, Verb: "get", Resource: "configmaps", Name: member.ClusterConfigMap})
		},
	)
}

// readAsProbe reads the cluster record as the probe's ServiceAccount impersonating user: read, the API
// server honours the new verbs; forbidden, it does not.
func readAsProbe(ctx context.Context, c *member.Cluster, token, user, version string) (member.ImpersonationSupport, error) {
	cfg := rest.AnonymousClientConfig(c.Config)
	cfg.BearerToken = token
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	as, err := kube.NewForConfig(cfg)
	if err != nil {
		return member.ImpersonationSupport{}, fmt.Errorf("%w: %w", ErrProbe, err)
	}
	deadline := time.Now().Add(PolicyTimeout)
	for {
		_, err = as.CoreV1().ConfigMaps(member.SystemNamespace).Get(ctx, member.ClusterConfigMap, metav1.GetOptions{})
		switch {
		case err == nil:
			return member.ImpersonationSupport{Constrained: true, Reason: fmt.Sprintf("the API server (%s) honours constrained impersonation: a probe holding only impersonate:user-info and impersonate-on:user-info:get read as the user it impersonated", version)}, nil
		case apierrors.IsForbidden(err):
			return member.ImpersonationSupport{Reason: fmt.Sprintf("the API server (%s) does not honour constrained impersonation (an older minor, or the ConstrainedImpersonation feature gate off): a probe holding impersonate:user-info and impersonate-on:user-info:get was refused", version)}, nil
		case apierrors.IsUnauthorized(err) && time.Now().Before(deadline):
			// A token of a ServiceAccount made a moment ago: the authenticator may not see it yet.
			select {
			case <-ctx.Done():
				return member.ImpersonationSupport{}, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		default:
			return member.ImpersonationSupport{}, fmt.Errorf("%w: the probe's read: %w", ErrProbe, err)
		}
	}
}

// waitAllowed repeats a SubjectAccessReview until it is allowed (RBAC just written reaches the authorizer
// through a cache), bounded by policyTimeout.
func waitAllowed(ctx context.Context, c *member.Cluster, user string, groups []string, a authzv1.ResourceAttributes) error {
	deadline := time.Now().Add(PolicyTimeout)
	pause := 50 * time.Millisecond
	for {
		allowed, err := AccessReview(ctx, c, user, groups, a)
		if err != nil {
			return err
		}
		if allowed {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the authorizer did not allow %s to %s %s within %s", user, a.Verb, a.Resource, PolicyTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 500*time.Millisecond)
	}
}

// EveryVerb is what a scope's "*" stands for.
var EveryVerb = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// ImpersonateOn is the constrained-impersonation verb that allows verb while impersonating a user.
func ImpersonateOn(verb string) string { return "impersonate-on:user-info:" + verb }

// AlwaysOn are the reads every exchange credential may make as its target whatever its scope: discovery
// (kubectl reads it before anything else) and reviews of the target's own identity and of one action at a
// time (kubectl auth whoami and can-i, and status --check), which reveal nothing beyond what the holder
// could learn by trying. Not the rules review (can-i --list), which would list every right of the target.
func AlwaysOn() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/version", "/openapi/*"}, Verbs: []string{ImpersonateOn("get")}},
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"selfsubjectreviews"}, Verbs: []string{ImpersonateOn("create")}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews"}, Verbs: []string{ImpersonateOn("create")}},
	}
}
