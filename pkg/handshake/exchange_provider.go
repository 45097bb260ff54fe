package handshake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
)

// ExchangeInfo is a consumer's exchange request as the provider sees it.
type ExchangeInfo struct {
	ConsumerID string     `json:"consumerID"`
	Name       string     `json:"name"`
	Rule       string     `json:"rule"`
	User       string     `json:"user"`
	Groups     []string   `json:"groups,omitempty"`
	UID        string     `json:"uid,omitempty"`
	Phase      string     `json:"phase"`
	Reason     string     `json:"reason,omitempty"`
	Credential string     `json:"credential,omitempty"` // the user of the issued certificate
	NotAfter   *time.Time `json:"notAfter,omitempty"`
}

// exchangePhase is a request's phase for the CSR it holds now: an answer to an earlier key leaves the
// current one pending.
func exchangePhase(r *v1alpha1.ExchangeRequest) string {
	switch r.Status.Phase {
	case ExchangeRefused:
		return ExchangeRefused
	case ExchangeIssued:
		csr, err := ParseCSR(r.Spec.CSR)
		cert, cerr := parseCertificate("status.certificate", r.Status.Certificate)
		if err == nil && cerr == nil && samePublicKey(csr.PublicKey, cert.PublicKey) {
			return ExchangeIssued
		}
	}
	return ExchangePending
}

// ExchangeRequests (provider) lists a consumer's exchange requests.
func (c *Cluster) ExchangeRequests(ctx context.Context, consumerID string) ([]ExchangeInfo, error) {
	l, err := c.Dynamic.Resource(v1alpha1.ExchangeRequestGVR).Namespace(TenantNamespace(consumerID)).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []ExchangeInfo
	for i := range l.Items {
		var r v1alpha1.ExchangeRequest
		if fromUnstructured(&l.Items[i], &r) != nil {
			continue
		}
		info := ExchangeInfo{ConsumerID: consumerID, Name: r.Name, Rule: r.Spec.Rule, User: r.Spec.Target.User, Groups: r.Spec.Target.Groups,
			UID: r.Spec.Target.UID, Phase: exchangePhase(&r), Reason: r.Status.Reason}
		if info.Phase == ExchangeIssued {
			info.Credential = r.Status.User
			info.NotAfter = timeOf(r.Status.NotAfter)
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b ExchangeInfo) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out, nil
}

// ValidateExchangeRequest checks a consumer's ExchangeRequest before anything is created: its name is its
// rule and target's, the target is a plain identity (never in system:), and the CSR asks for exactly the
// credential's user, with nothing else in it.
func ValidateExchangeRequest(r *v1alpha1.ExchangeRequest, consumerID string) error {
	if r.Spec.Rule == "" || len(r.Spec.Rule) > exchange.MaxRuleNameLength || ValidateSliceName("spec.rule", r.Spec.Rule) != nil {
		return fmt.Errorf("spec.rule %q: must be a DNS label of at most %d characters", truncate(r.Spec.Rule), exchange.MaxRuleNameLength)
	}
	t := fromExchangeTarget(r.Spec.Target)
	if err := exchange.ValidateTarget("spec.target", t); err != nil {
		return err
	}
	key := ExchangeKey(r.Spec.Rule, t)
	if r.Name != key {
		return fmt.Errorf("metadata.name %q: must be %q, the name of this rule and target", truncate(r.Name), key)
	}
	csr, err := ParseCSR(r.Spec.CSR)
	if err != nil {
		return err
	}
	if want := ExchangeUser(consumerID, key); csr.Subject.CommonName != want {
		return fmt.Errorf("spec.csr: subject CN %q is not the user of this rule and target (%q)", truncate(csr.Subject.CommonName), want)
	}
	return CheckCSRSubject(csr, csr.Subject.CommonName)
}

// AllowExchangeOptions say which of a consumer's requests the provider answers: Name, Rule, or both.
type AllowExchangeOptions struct {
	ConsumerID string
	// Rule selects the consumer's requests of this rule.
	Rule string
	// Name selects the one request of this name, the target the administrator saw listed: a request the
	// tenant adds under the same rule in the meantime is not answered.
	Name       string
	Expiration time.Duration // 0 means ExchangeExpiration
}

// AllowExchange (provider) issues the credentials a consumer asked for under a rule, each after every
// check passed (ValidateExchangeRequest, an active pairing): the certificate through the CSR API (exactly
// the CSR this run created, checked once issued), then a ClusterRole allowing to impersonate exactly the
// target and its ClusterRoleBinding to the credential's user, then the answer in the request's status. A
// request that fails a check is answered Refused with nothing created. A request already issued for its
// current key keeps its certificate; the rest converges. It returns what it answered.
func (c *Cluster) AllowExchange(ctx context.Context, o AllowExchangeOptions) ([]ExchangeInfo, error) {
	if o.Rule == "" && o.Name == "" {
		return nil, errors.New("no request named: give a rule or a request's name")
	}
	if _, err := c.Load(ctx); err != nil {
		return nil, err
	}
	if o.Expiration == 0 {
		o.Expiration = ExchangeExpiration
	}
	if _, err := c.activeTenant(ctx, o.ConsumerID); err != nil {
		return nil, err
	}
	tns := TenantNamespace(o.ConsumerID)
	l, err := c.Dynamic.Resource(v1alpha1.ExchangeRequestGVR).Namespace(tns).List(ctx, metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	var answered []ExchangeInfo
	var errs []error
	found := false
	for i := range l.Items {
		var r v1alpha1.ExchangeRequest
		if fromUnstructured(&l.Items[i], &r) != nil || (o.Rule != "" && r.Spec.Rule != o.Rule) || (o.Name != "" && r.Name != o.Name) {
			continue
		}
		found = true
		info, err := c.allowExchange(ctx, o, &r)
		if err != nil {
			errs = append(errs, fmt.Errorf("ExchangeRequest %s/%s: %w", tns, r.Name, err))
		}
		if info != nil {
			answered = append(answered, *info)
		}
	}
	if !found {
		what := fmt.Sprintf("for rule %q", o.Rule)
		if o.Name != "" {
			what = fmt.Sprintf("%q", o.Name)
		}
		return nil, fmt.Errorf("consumer %q has left no ExchangeRequest %s in %s (it asks with kubectl federate get kubeconfig --for-user ...)", o.ConsumerID, what, tns)
	}
	return answered, errors.Join(errs...)
}

func (c *Cluster) allowExchange(ctx context.Context, o AllowExchangeOptions, r *v1alpha1.ExchangeRequest) (*ExchangeInfo, error) {
	rep := c.report()
	tns := TenantNamespace(o.ConsumerID)
	info := &ExchangeInfo{ConsumerID: o.ConsumerID, Name: r.Name, Rule: r.Spec.Rule, User: r.Spec.Target.User, Groups: r.Spec.Target.Groups, UID: r.Spec.Target.UID}
	if err := ValidateExchangeRequest(r, o.ConsumerID); err != nil {
		info.Phase, info.Reason = ExchangeRefused, err.Error()
		if serr := c.applyExchangeStatus(ctx, tns, r.Name, v1alpha1.ExchangeRequestStatus{Phase: ExchangeRefused, Reason: err.Error()}); serr != nil {
			return info, errors.Join(err, serr)
		}
		return info, err
	}
	t := fromExchangeTarget(r.Spec.Target)
	user := ExchangeUser(o.ConsumerID, r.Name)
	csr, err := ParseCSR(r.Spec.CSR)
	if err != nil {
		return nil, err
	}
	certPEM, notAfter := []byte(nil), time.Time{}
	if exchangePhase(r) == ExchangeIssued && r.Status.NotAfter != nil && c.now().Before(r.Status.NotAfter.Time) {
		certPEM, notAfter = r.Status.Certificate, r.Status.NotAfter.Time
		rep.Info("ExchangeRequest " + r.Name + " was already issued for this key: its certificate is kept, the rest converges")
	} else {
		req, err := c.createCSR(ctx, o.ConsumerID, exchangeProviderLabels(o.ConsumerID, r.Name), r.Spec.CSR, o.Expiration)
		if err != nil {
			return nil, err
		}
		defer c.deleteCSR(ctx, req)
		if err := step(rep, "Issuing the exchange credential "+r.Name+" through the CSR API", "Exchange credential "+r.Name+" issued to "+user, func() error {
			var err error
			if certPEM, err = c.approveAndWait(ctx, req, 0); err != nil {
				return err
			}
			cert, err := checkIssued(certPEM, csr, c.now().Add(o.Expiration+issuedSlack))
			if err == nil {
				notAfter = cert.NotAfter
			}
			return err
		}); err != nil {
			return nil, err
		}
	}
	if err := step(rep, "Letting "+user+" impersonate "+t.User, "ClusterRole and ClusterRoleBinding "+ExchangeRBACName(o.ConsumerID, r.Name)+": impersonate user "+t.User+
		groupsNote(t.Groups)+" and nothing else", func() error {
		if err := c.applyTyped(ctx, rbacv1.SchemeGroupVersion.WithResource("clusterroles"), "", exchangeClusterRole(o.ConsumerID, r.Name, t)); err != nil {
			return fmt.Errorf("applying ClusterRole %s: %w", ExchangeRBACName(o.ConsumerID, r.Name), err)
		}
		if err := c.applyTyped(ctx, rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"), "", exchangeClusterRoleBinding(o.ConsumerID, r.Name)); err != nil {
			return fmt.Errorf("applying ClusterRoleBinding %s: %w", ExchangeRBACName(o.ConsumerID, r.Name), err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	na := metav1.NewTime(notAfter)
	if err := c.applyExchangeStatus(ctx, tns, r.Name, v1alpha1.ExchangeRequestStatus{Phase: ExchangeIssued, User: user, Certificate: certPEM, NotAfter: &na}); err != nil {
		return nil, fmt.Errorf("recording the answer: %w", err)
	}
	c.audit(ctx, tenantObject(o.ConsumerID), EventGranted, "exchange credential "+r.Name+" (rule "+r.Spec.Rule+") may impersonate "+t.User+groupsNote(t.Groups),
		&Credential{User: user, NotAfter: notAfter})
	info.Phase, info.Credential, info.NotAfter = ExchangeIssued, user, &notAfter
	return info, nil
}

func groupsNote(groups []string) string {
	if len(groups) == 0 {
		return ""
	}
	return fmt.Sprintf(", groups %v", groups)
}

// applyExchangeStatus server-side applies an ExchangeRequest's status.
func (c *Cluster) applyExchangeStatus(ctx context.Context, ns, name string, st v1alpha1.ExchangeRequestStatus) error {
	obj := &v1alpha1.ExchangeRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.ExchangeRequestKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Status:     st,
	}
	return c.applyStatus(ctx, v1alpha1.ExchangeRequestGVR, obj)
}
