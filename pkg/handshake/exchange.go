package handshake

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
)

// Identity exchange (cluster-gateway's ClientIdentityExchanger, without a gateway): the consumer's rules,
// in a ConfigMap of federate-system, say which of its users reach a provider as the pairing's identity
// (privileged) or as another identity (static or external). Another identity is a credential of its own: a
// client certificate for a fresh key, whose user the provider lets impersonate exactly the target (a
// ClusterRole with impersonate on those resourceNames, bound cluster-wide since impersonation is not
// namespaced) and nothing else. Its holder cannot act as anyone else, the pairing's identity included.
// Issuing one needs the provider's consent: its administrator answers an ExchangeRequest the consumer left
// in its tenant namespace (allow exchange), or holds both kubeconfigs (one shot).

// Names of the identity exchange.
const (
	ExchangeRulesConfigMap = "federate-exchange-rules"
	ExchangeRulesKey       = "rules.yaml"
	// LabelExchange names the (rule, target) a provider's ClusterRole, ClusterRoleBinding and CSR, or a
	// consumer's Secret, serves: <rule>-<8 hex of the target>.
	LabelExchange = "federate.dev/exchange"

	// ExchangeExpiration is the life of an exchange credential; running get kubeconfig after it asks
	// again.
	ExchangeExpiration = 30 * 24 * time.Hour

	ExchangeIssued  = "Issued"
	ExchangeRefused = "Refused"
	ExchangePending = "Pending"
	ExchangeRevoked = "Revoked"
)

// exchangeRenewBefore is how long before its expiry a stored exchange credential is replaced rather than
// handed out again.
const exchangeRenewBefore = time.Hour

// ExchangeKey names a (rule, target): the ExchangeRequest, and the label of everything made for it.
func ExchangeKey(rule string, t exchange.Target) string { return rule + "-" + exchange.Hash(t) }

// ExchangeUser is the user of the credential for a (rule, target) of a consumer.
func ExchangeUser(consumerID, key string) string { return UserPrefix + consumerID + ":exchange-" + key }

// ExchangeRBACName names the provider's ClusterRole and ClusterRoleBinding of a credential.
func ExchangeRBACName(consumerID, key string) string {
	return "federate-exchange-" + consumerID + "-" + key
}

// ExchangeKubeconfigSecretName is the consumer's Secret holding an exchange credential's kubeconfig.
func ExchangeKubeconfigSecretName(providerID, key string) string {
	return "kubeconfig-exchange-" + providerID + "." + key
}

// exchangePendingKeySecretName holds an exchange credential's key until its certificate is imported.
func exchangePendingKeySecretName(providerID, key string) string {
	return "exchange-" + providerID + "." + key + "-pending-key"
}

// exchangeLabels are carried by the consumer's objects for an exchange credential; IdentityLabels among
// them make RemoveIdentity take them with the pairing.
func exchangeLabels(providerID, key string) map[string]string {
	l := IdentityLabels(providerID)
	l[LabelExchange] = key
	return l
}

// exchangeProviderLabels are carried by the provider's objects for an exchange credential; TenantLabels
// among them make RemoveTenant's CSR cleanup take them too.
func exchangeProviderLabels(consumerID, key string) map[string]string {
	l := TenantLabels(consumerID)
	l[LabelExchange] = key
	return l
}

// ErrNoExchangeRules is returned when no rules were applied on this cluster.
var ErrNoExchangeRules = errors.New("no identity-exchange rules are stored on this cluster")

// ApplyExchangeRules (consumer) stores a rule file, after checking it again: a bad file changes nothing.
// It returns whether anything changed.
func (c *Cluster) ApplyExchangeRules(ctx context.Context, data []byte) (bool, error) {
	if _, err := exchange.Parse(data); err != nil {
		return false, err
	}
	if _, err := c.Load(ctx); err != nil {
		return false, err
	}
	cms := c.Kube.CoreV1().ConfigMaps(SystemNamespace)
	want := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ExchangeRulesConfigMap, Namespace: SystemNamespace, Labels: map[string]string{LabelManagedBy: ManagedBy}},
		Data:       map[string]string{ExchangeRulesKey: string(data)},
	}
	have, err := cms.Get(ctx, ExchangeRulesConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, want, metav1.CreateOptions{})
		return err == nil, err
	case err != nil:
		return false, err
	case have.Data[ExchangeRulesKey] == string(data) && have.Labels[LabelManagedBy] == ManagedBy:
		return false, nil
	}
	have = have.DeepCopy()
	have.Data = want.Data
	if have.Labels == nil {
		have.Labels = map[string]string{}
	}
	have.Labels[LabelManagedBy] = ManagedBy
	_, err = cms.Update(ctx, have, metav1.UpdateOptions{})
	return err == nil, err
}

// ExchangeRules (consumer) reads and checks the stored rule file; ErrNoExchangeRules if there is none.
func (c *Cluster) ExchangeRules(ctx context.Context) (*exchange.Config, []byte, error) {
	cm, err := c.Kube.CoreV1().ConfigMaps(SystemNamespace).Get(ctx, ExchangeRulesConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("%w (no ConfigMap %s/%s)", ErrNoExchangeRules, SystemNamespace, ExchangeRulesConfigMap)
	}
	if err != nil {
		return nil, nil, err
	}
	data := []byte(cm.Data[ExchangeRulesKey])
	cfg, err := exchange.Parse(data)
	if err != nil {
		return nil, nil, fmt.Errorf("ConfigMap %s/%s: %w", SystemNamespace, ExchangeRulesConfigMap, err)
	}
	return cfg, data, nil
}

// ExchangeOptions name an exchange credential a consumer asks for.
type ExchangeOptions struct {
	ProviderID   string
	Rule         string
	Target       exchange.Target
	KeyAlgorithm string
}

// ExchangeResult is a consumer's exchange credential, or why there is none yet.
type ExchangeResult struct {
	Key        string
	Kubeconfig []byte // nil while the provider has not answered
	User       string
	NotAfter   time.Time
	Reused     bool
}

// ErrExchangePending says that the provider's administrator has not answered the request yet.
var ErrExchangePending = errors.New("is waiting for the provider's consent")

// ExchangePendingError says which request waits and what the provider's administrator runs.
type ExchangePendingError struct {
	ProviderID, ConsumerID, Rule, Key string
	Target                            exchange.Target
}

func (e *ExchangePendingError) Error() string {
	return fmt.Sprintf("exchange credential %s for provider %q (rule %q, target user %q) %v: ExchangeRequest %s waits in %s there; the provider's administrator runs: kubectl federate allow exchange %s --remote-cluster-id %s, then run this again",
		e.Key, e.ProviderID, e.Rule, e.Target.User, ErrExchangePending, e.Key, TenantNamespace(e.ConsumerID), e.Key, e.ConsumerID)
}

func (e *ExchangePendingError) Unwrap() error { return ErrExchangePending }

// StoredExchange (consumer) returns the stored kubeconfig of a (rule, target) while its certificate is
// valid for a while yet.
func (c *Cluster) StoredExchange(ctx context.Context, providerID, key string) (*ExchangeResult, bool) {
	sec, err := c.Kube.CoreV1().Secrets(SystemNamespace).Get(ctx, ExchangeKubeconfigSecretName(providerID, key), metav1.GetOptions{})
	if err != nil {
		return nil, false
	}
	certPEM, err := kubeconfig.ClientCertificate(sec.Data[KubeconfigKey])
	if err != nil {
		return nil, false
	}
	cert, err := parseCertificate("certificate", certPEM)
	if err != nil || !c.now().Add(exchangeRenewBefore).Before(cert.NotAfter) {
		return nil, false
	}
	return &ExchangeResult{Key: key, Kubeconfig: sec.Data[KubeconfigKey], User: cert.Subject.CommonName, NotAfter: cert.NotAfter, Reused: true}, true
}

// RequestExchange (consumer) gets the credential of a (rule, target) from provider, which is the
// provider as the pairing's identity sees it (manual flow) or as its administrator (one shot, after which
// the caller runs AllowExchange and calls this again). A valid stored credential is returned as it is.
// Otherwise a key waits in federate-system and an ExchangeRequest with its CSR in the tenant namespace; once
// the provider issued the certificate, it is checked against the waiting key and the expected user, and
// the kubeconfig is stored. Until then an *ExchangePendingError is returned. Re-running changes nothing.
func (c *Cluster) RequestExchange(ctx context.Context, provider *Cluster, o ExchangeOptions) (*ExchangeResult, error) {
	self, err := c.Load(ctx)
	if err != nil {
		return nil, err
	}
	if err := exchange.ValidateTarget("target", o.Target); err != nil {
		return nil, err
	}
	key := ExchangeKey(o.Rule, o.Target)
	tns := TenantNamespace(self.ClusterID)
	reqs := provider.Dynamic.Resource(v1alpha1.ExchangeRequestGVR).Namespace(tns)
	if res, ok := c.StoredExchange(ctx, o.ProviderID, key); ok {
		// The provider's answer still stands (revoke marks it Revoked and removes the credential's rights):
		// otherwise the stored kubeconfig would be handed out dead.
		live, err := c.exchangeStands(ctx, reqs, key, res.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("checking ExchangeRequest %s/%s on provider %q: %w", tns, key, o.ProviderID, err)
		}
		if live {
			return res, nil
		}
		c.report().Warn("The stored credential " + key + " is no longer issued by provider " + o.ProviderID + ": asking for a new one")
		if err := ignoreNotFound(c.Kube.CoreV1().Secrets(SystemNamespace).Delete(ctx, ExchangeKubeconfigSecretName(o.ProviderID, key), metav1.DeleteOptions{})); err != nil {
			return nil, err
		}
	}
	user := ExchangeUser(self.ClusterID, key)
	keyPEM, csrPEM, signer, err := c.ensureExchangeKey(ctx, o.ProviderID, key, user, o.KeyAlgorithm)
	if err != nil {
		return nil, err
	}
	pending := &ExchangePendingError{ProviderID: o.ProviderID, ConsumerID: self.ClusterID, Rule: o.Rule, Key: key, Target: o.Target}
	u, err := reqs.Get(ctx, key, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj := &v1alpha1.ExchangeRequest{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.ExchangeRequestKind},
			ObjectMeta: metav1.ObjectMeta{Name: key, Namespace: tns},
			Spec:       v1alpha1.ExchangeRequestSpec{Rule: o.Rule, Target: toExchangeTarget(o.Target), CSR: csrPEM},
		}
		nu, err := toUnstructured(obj)
		if err != nil {
			return nil, err
		}
		unstructured.RemoveNestedField(nu.Object, "status")
		if _, err := c.createCounted(ctx, provider, v1alpha1.ExchangeRequestGVR, nu); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("leaving ExchangeRequest %s/%s on provider %q: %w", tns, key, o.ProviderID, err)
		}
		c.report().Info("ExchangeRequest " + key + " left in " + tns + " on provider " + o.ProviderID)
		return nil, pending
	}
	if err != nil {
		return nil, fmt.Errorf("reading ExchangeRequest %s/%s on provider %q: %w", tns, key, o.ProviderID, err)
	}
	var req v1alpha1.ExchangeRequest
	if err := fromUnstructured(u, &req); err != nil {
		return nil, err
	}
	// CSRs are signed afresh on each run (ECDSA signatures are randomized): compare what they ask for.
	have, perr := ParseCSR(req.Spec.CSR)
	if perr != nil || !samePublicKey(have.PublicKey, signer.Public()) || req.Spec.Rule != o.Rule || exchange.Hash(fromExchangeTarget(req.Spec.Target)) != exchange.Hash(o.Target) {
		// An earlier key's request (expired, or its key lost): ask again for this key.
		req.Spec = v1alpha1.ExchangeRequestSpec{Rule: o.Rule, Target: toExchangeTarget(o.Target), CSR: csrPEM}
		nu, err := toUnstructured(&req)
		if err != nil {
			return nil, err
		}
		nu.SetResourceVersion(u.GetResourceVersion())
		if _, err := reqs.Update(ctx, nu, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("renewing ExchangeRequest %s/%s on provider %q: %w", tns, key, o.ProviderID, err)
		}
		return nil, pending
	}
	if req.Status.Phase == ExchangeRefused {
		return nil, fmt.Errorf("exchange credential %s %w by provider %q: %s", key, ErrDenied, o.ProviderID, req.Status.Reason)
	}
	if req.Status.Phase != ExchangeIssued || len(req.Status.Certificate) == 0 {
		return nil, pending
	}
	cert, err := parseCertificate("status.certificate", req.Status.Certificate)
	if err != nil {
		return nil, err
	}
	if !samePublicKey(cert.PublicKey, signer.Public()) {
		return nil, pending // the answer to an earlier key's request
	}
	switch {
	case cert.Subject.CommonName != user:
		return nil, fmt.Errorf("status.certificate: is for user %q, the waiting key is for %q", truncate(cert.Subject.CommonName), user)
	case !clientAuth(cert):
		return nil, errors.New("status.certificate: is not valid for client authentication")
	case !c.now().Before(cert.NotAfter):
		return nil, fmt.Errorf("status.certificate: expired at %s", cert.NotAfter.UTC().Format(time.RFC3339))
	}
	pairing, err := c.GetKubeconfig(ctx, o.ProviderID)
	if err != nil {
		return nil, err
	}
	server, ca, proxy, err := kubeconfig.Endpoint(pairing)
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig stored for provider %q: %w", o.ProviderID, err)
	}
	kc, err := kubeconfig.Build(kubeconfig.Params{Name: o.ProviderID + "-exchange-" + key, Server: server, CA: ca, ProxyURL: proxy,
		CertPEM: req.Status.Certificate, KeyPEM: keyPEM})
	if err != nil {
		return nil, err
	}
	if kc, err = kubeconfig.Impersonate(kc, o.Target.User, o.Target.Groups, o.Target.UID); err != nil {
		return nil, err
	}
	secrets := c.Kube.CoreV1().Secrets(SystemNamespace)
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: ExchangeKubeconfigSecretName(o.ProviderID, key), Namespace: SystemNamespace,
			Labels: exchangeLabels(o.ProviderID, key), Annotations: map[string]string{userAnnotation: user}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{KubeconfigKey: kc},
	}
	if _, err := secrets.Create(ctx, sec, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
		if err != nil {
			return nil, fmt.Errorf("storing Secret %s/%s: %w", SystemNamespace, sec.Name, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("storing Secret %s/%s: %w", SystemNamespace, sec.Name, err)
	}
	c.report().Info("Exchange credential " + key + " stored in Secret " + SystemNamespace + "/" + sec.Name)
	if err := ignoreNotFound(secrets.Delete(ctx, exchangePendingKeySecretName(o.ProviderID, key), metav1.DeleteOptions{})); err != nil {
		return nil, err
	}
	return &ExchangeResult{Key: key, Kubeconfig: kc, User: user, NotAfter: cert.NotAfter}, nil
}

// exchangeStands tells whether the provider's answer to a request still holds the certificate of a
// stored kubeconfig.
func (c *Cluster) exchangeStands(ctx context.Context, reqs interface {
	Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
}, key string, kc []byte) (bool, error) {
	u, err := reqs.Get(ctx, key, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var req v1alpha1.ExchangeRequest
	if err := fromUnstructured(u, &req); err != nil {
		return false, err
	}
	have, err := kubeconfig.ClientCertificate(kc)
	if err != nil {
		return false, nil //nolint:nilerr // an unreadable stored kubeconfig is replaced, not an error
	}
	return req.Status.Phase == ExchangeIssued && samePEMBlock(have, req.Status.Certificate), nil
}

func samePEMBlock(a, b []byte) bool {
	pa, _ := pem.Decode(a)
	pb, _ := pem.Decode(b)
	return pa != nil && pb != nil && slices.Equal(pa.Bytes, pb.Bytes)
}

// ensureExchangeKey returns the key waiting for a (rule, target)'s certificate, creating it if none
// waits, and a CSR for user.
func (c *Cluster) ensureExchangeKey(ctx context.Context, providerID, key, user, alg string) (keyPEM, csrPEM []byte, signer crypto.Signer, err error) {
	secrets := c.Kube.CoreV1().Secrets(SystemNamespace)
	name := exchangePendingKeySecretName(providerID, key)
	existing, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		if s, perr := parseSigner(existing.Data[privateKeyKey]); perr == nil && existing.Annotations[userAnnotation] == user {
			csr, cerr := NewCSR(user, s)
			return existing.Data[privateKeyKey], csr, s, cerr
		}
	} else if !apierrors.IsNotFound(err) {
		return nil, nil, nil, err
	}
	s, err := NewClientKey(alg)
	if err != nil {
		return nil, nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(s)
	if err != nil {
		return nil, nil, nil, err
	}
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: SystemNamespace, Labels: exchangeLabels(providerID, key),
			Annotations: map[string]string{userAnnotation: user}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{privateKeyKey: keyPEM},
	}
	if existing != nil && existing.Name != "" {
		sec.ResourceVersion = existing.ResourceVersion
		_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
	} else {
		_, err = secrets.Create(ctx, sec, metav1.CreateOptions{})
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("storing the exchange credential's key in Secret %s/%s: %w", SystemNamespace, name, err)
	}
	csr, err := NewCSR(user, s)
	return keyPEM, csr, s, err
}

func toExchangeTarget(t exchange.Target) v1alpha1.ExchangeTarget {
	return v1alpha1.ExchangeTarget{User: t.User, Groups: t.Groups, UID: t.UID}
}

func fromExchangeTarget(t v1alpha1.ExchangeTarget) exchange.Target {
	return exchange.Target{User: t.User, Groups: t.Groups, UID: t.UID}
}

// exchangeSelector selects a consumer's exchange objects on the provider.
func exchangeSelector(consumerID string) string {
	return labels.SelectorFromSet(TenantLabels(consumerID)).String() + "," + LabelExchange
}

// exchangeClusterRole lets a credential's user impersonate exactly the target, nothing more.
func exchangeClusterRole(consumerID, key string, t exchange.Target) *rbacv1.ClusterRole {
	imp := []string{"impersonate"}
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: imp, ResourceNames: []string{t.User}}}
	if len(t.Groups) > 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"groups"}, Verbs: imp, ResourceNames: slices.Clone(t.Groups)})
	}
	if t.UID != "" {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"uids"}, Verbs: imp, ResourceNames: []string{t.UID}})
	}
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: ExchangeRBACName(consumerID, key), Labels: exchangeProviderLabels(consumerID, key)},
		Rules:      rules,
	}
}

func exchangeClusterRoleBinding(consumerID, key string) *rbacv1.ClusterRoleBinding {
	name := ExchangeRBACName(consumerID, key)
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: exchangeProviderLabels(consumerID, key)},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: ExchangeUser(consumerID, key)}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
	}
}

// removeExchanges (provider) deletes every exchange ClusterRoleBinding and ClusterRole of a consumer, the
// bindings first: from then on its exchange credentials may impersonate no one. The requests it answered
// are marked Revoked, so that the consumer asks anew rather than hand out a stored, dead kubeconfig.
func (c *Cluster) removeExchanges(ctx context.Context, consumerID string) error {
	if err := c.deleteExchangeRBAC(ctx, consumerID); err != nil {
		return err
	}
	tns := TenantNamespace(consumerID)
	l, err := c.Dynamic.Resource(v1alpha1.ExchangeRequestGVR).Namespace(tns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ignoreNotFound(err)
	}
	var errs []error
	for _, it := range l.Items {
		if phase, _, _ := unstructured.NestedString(it.Object, "status", "phase"); phase == ExchangeIssued {
			errs = append(errs, ignoreNotFound(c.applyExchangeStatus(ctx, tns, it.GetName(),
				v1alpha1.ExchangeRequestStatus{Phase: ExchangeRevoked, Reason: "the consumer was revoked"})))
		}
	}
	return errors.Join(errs...)
}

func (c *Cluster) deleteExchangeRBAC(ctx context.Context, consumerID string) error {
	// Through the dynamic client, as they were applied.
	sel := metav1.ListOptions{LabelSelector: exchangeSelector(consumerID)}
	for _, res := range []string{"clusterrolebindings", "clusterroles"} {
		if err := ignoreNotFound(c.Dynamic.Resource(rbacv1.SchemeGroupVersion.WithResource(res)).DeleteCollection(ctx, metav1.DeleteOptions{}, sel)); err != nil {
			return fmt.Errorf("removing the exchange %s of consumer %q: %w", res, consumerID, err)
		}
	}
	return nil
}

// Resolution is what the rules give a user reaching a provider.
type Resolution struct {
	Rule exchange.Rule
	// Target is who the user acts as; nil means the pairing's own identity (a privileged rule).
	Target *exchange.Target
}

// ErrNoExchangeRule says that no rule matches: nothing is handed out.
var ErrNoExchangeRule = errors.New("no identity-exchange rule matches")

// ResolveExchange (consumer) finds the rule that decides for req among the stored rules and, for an
// External rule, asks its service. Any failure refuses: a lower rule is never tried instead.
func (c *Cluster) ResolveExchange(ctx context.Context, req exchange.Request, client exchange.Client) (*Resolution, error) {
	cfg, _, err := c.ExchangeRules(ctx)
	if err != nil {
		return nil, err
	}
	rule, ok := exchange.Resolve(cfg.Spec.ClientIdentityExchanger.Rules, req)
	if !ok {
		return nil, fmt.Errorf("%w user %q (groups %q, uid %q) reaching provider %q: nothing is handed out", ErrNoExchangeRule, req.User, req.Groups, req.UID, req.Cluster)
	}
	res := &Resolution{Rule: *rule}
	switch rule.Type {
	case exchange.StaticMapping:
		t := *rule.Target
		res.Target = &t
	case exchange.External:
		if res.Target, err = client.Exchange(ctx, rule, req); err != nil {
			return nil, err
		}
	}
	return res, nil
}
