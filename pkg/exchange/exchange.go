package exchange

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Identity exchange (cluster-gateway's ClientIdentityExchanger, without a gateway): the consumer's rules,
// in a ConfigMap of federate-system, say which of its users reach a provider as the pairing's identity
// (privileged) or as another identity (static or external), and within which scope. Another identity is a
// credential of its own: a client certificate for a fresh key, whose user the provider lets act as exactly
// the target, for exactly the scope (constrained impersonation, enforced by the API server; see
// impersonation.go), and nothing else. Its holder cannot act as anyone else, the pairing's identity
// included. Issuing one needs the provider's consent: its administrator answers, by name, an
// ExchangeRequest the consumer left in its tenant namespace (allow exchange), or holds both kubeconfigs
// (one shot). Each key is a request, a user and a consent of its own, so a credential renewed, withdrawn
// or revoked leaves the older ones powerless.

// Names of the identity exchange.
const (
	ExchangeRulesConfigMap = "federate-exchange-rules"
	ExchangeRulesKey       = "rules.yaml"
	// AnnotationExchangeRequest names, on a consumer's Secret, the request its credential answers; on a
	// provider's binding, annotationExchangeTarget names the target it lets its user act as.
	AnnotationExchangeRequest = "federate.dev/exchange-request"
	annotationExchangeTarget  = "federate.dev/exchange-target"
	AnnotationExchangeMode    = "federate.dev/exchange-mode"

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

// RequestName names a request: its rule, for the reader, and its hash (RequestHash).
func RequestName(rule, hash string) string { return rule + "-" + hash }

// User is the user of the credential of a request (by its hash) of a consumer.
func User(consumerID, hash string) string {
	return member.UserPrefix + consumerID + ":exchange-" + hash
}

// KubeconfigSecretName is the consumer's Secret holding the credential of a grant.
func KubeconfigSecretName(providerID, rule, grant string) string {
	return "kubeconfig-exchange-" + providerID + "." + rule + "-" + grant
}

// PendingKeySecretName holds a grant's key until its certificate is imported.
func PendingKeySecretName(providerID, rule, grant string) string {
	return "exchange-" + providerID + "." + rule + "-" + grant + "-pending-key"
}

// exchangeLabels are carried by the consumer's objects for an exchange credential; IdentityLabels among
// them make RemoveIdentity take them with the pairing.
func exchangeLabels(providerID, grant string) map[string]string {
	l := member.IdentityLabels(providerID)
	l[member.LabelExchange] = grant
	return l
}

// exchangeProviderLabels are carried by the provider's objects for an exchange credential; TenantLabels
// among them make RemoveTenant's CSR cleanup take them too.
func exchangeProviderLabels(consumerID, hash string) map[string]string {
	l := member.TenantLabels(consumerID)
	l[member.LabelExchange] = hash
	return l
}

// ErrNoExchangeRules is returned when no rules were applied on this cluster.
var ErrNoExchangeRules = errors.New("no identity-exchange rules are stored on this cluster")

// ApplyExchangeRules (consumer) stores a rule file, after checking it again: a bad file changes nothing.
// It says what it did, as kubectl says it: "created", "configured" or "unchanged".
func ApplyExchangeRules(ctx context.Context, c *member.Cluster, data []byte) (string, error) {
	if _, err := Parse(data); err != nil {
		return "", err
	}
	if _, err := c.Load(ctx); err != nil {
		return "", err
	}
	cms := c.Kube.CoreV1().ConfigMaps(member.SystemNamespace)
	want := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ExchangeRulesConfigMap, Namespace: member.SystemNamespace, Labels: map[string]string{member.LabelManagedBy: member.ManagedBy}},
		Data:       map[string]string{ExchangeRulesKey: string(data)},
	}
	have, err := cms.Get(ctx, ExchangeRulesConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(ctx, want, metav1.CreateOptions{})
		return "created", err
	case err != nil:
		return "", err
	case have.Data[ExchangeRulesKey] == string(data) && have.Labels[member.LabelManagedBy] == member.ManagedBy:
		return "unchanged", nil
	}
	have = have.DeepCopy()
	have.Data = want.Data
	if have.Labels == nil {
		have.Labels = map[string]string{}
	}
	have.Labels[member.LabelManagedBy] = member.ManagedBy
	_, err = cms.Update(ctx, have, metav1.UpdateOptions{})
	return "configured", err
}

// Rules (consumer) reads and checks the stored rule file; ErrNoExchangeRules if there is none.
func Rules(ctx context.Context, c *member.Cluster) (*Config, []byte, error) {
	cm, err := c.Kube.CoreV1().ConfigMaps(member.SystemNamespace).Get(ctx, ExchangeRulesConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("%w (no ConfigMap %s/%s)", ErrNoExchangeRules, member.SystemNamespace, ExchangeRulesConfigMap)
	}
	if err != nil {
		return nil, nil, err
	}
	data := []byte(cm.Data[ExchangeRulesKey])
	cfg, err := Parse(data)
	if err != nil {
		return nil, nil, fmt.Errorf("ConfigMap %s/%s: %w", member.SystemNamespace, ExchangeRulesConfigMap, err)
	}
	return cfg, data, nil
}

// Options name an exchange credential a consumer asks for.
type Options struct {
	ProviderID   string
	Rule         string
	Target       Target
	Scope        Scope
	KeyAlgorithm string
}

// Result is a consumer's exchange credential.
type Result struct {
	Request    string // the ExchangeRequest it answers
	Kubeconfig []byte
	User       string
	NotAfter   time.Time
	Reused     bool
}

// ErrExchangePending says that the provider's administrator has not answered the request yet.
var ErrExchangePending = errors.New("is waiting for the provider's consent")

// PendingError says which request waits; the command says what the provider's administrator runs.
type PendingError struct {
	ProviderID, ConsumerID, Rule, Request string
	Target                                Target
	Scope                                 Scope
}

func (e *PendingError) Error() string {
	return fmt.Sprintf("exchange credential for provider %q (rule %q, target user %q, %s) %v: ExchangeRequest %s waits in %s there",
		e.ProviderID, e.Rule, e.Target.User, e.Scope.String(), ErrExchangePending, e.Request, member.TenantNamespace(e.ConsumerID))
}

func (e *PendingError) Unwrap() error { return ErrExchangePending }

// StoredExchange (consumer) returns the stored credential of a grant while its certificate is valid for a
// while yet.
func StoredExchange(ctx context.Context, c *member.Cluster, providerID, rule, grant string) (*Result, bool) {
	sec, err := c.Kube.CoreV1().Secrets(member.SystemNamespace).Get(ctx, KubeconfigSecretName(providerID, rule, grant), metav1.GetOptions{})
	if err != nil {
		return nil, false
	}
	certPEM, err := kubeconfig.ClientCertificate(sec.Data[handshake.KubeconfigKey])
	if err != nil {
		return nil, false
	}
	cert, err := credential.ParseCertificate("certificate", certPEM)
	if err != nil || !c.CurrentTime().Add(exchangeRenewBefore).Before(cert.NotAfter) {
		return nil, false
	}
	return &Result{Request: sec.Annotations[AnnotationExchangeRequest], Kubeconfig: sec.Data[handshake.KubeconfigKey], User: cert.Subject.CommonName,
		NotAfter: cert.NotAfter, Reused: true}, true
}

// RequestExchange (consumer) gets the credential of a (rule, target, scope) from provider, which is the
// provider as the pairing's identity sees it (manual flow) or as its administrator (one shot, after which
// the caller runs AllowExchange and calls this again). A valid stored credential whose request the
// provider still answers Issued is returned as it is. Otherwise a key waits in federate-system, and the
// ExchangeRequest of that key (named by its hash, its spec never changed) waits in the tenant namespace;
// once the provider issued it, the certificate is checked against the waiting key and the expected user,
// the kubeconfig is stored and the consumer's older requests of the same grant are withdrawn. Until then
// an *ExchangePendingError is returned. A refused request fails; a revoked one is asked anew with a new
// key. Re-running changes nothing.
func RequestExchange(ctx context.Context, c *member.Cluster, provider *member.Cluster, o Options) (*Result, error) {
	self, err := c.Load(ctx)
	if err != nil {
		return nil, err
	}
	if err := ValidateTarget("target", o.Target); err != nil {
		return nil, err
	}
	if err := ValidateScope("scope", o.Scope); err != nil {
		return nil, err
	}
	o.Scope = o.Scope.Canonical()
	grant := GrantHash(o.Rule, o.Target, o.Scope)
	tns := member.TenantNamespace(self.ClusterID)
	reqs := provider.Dynamic.Resource(v1alpha1.ExchangeRequestGVR).Namespace(tns)
	secrets := c.Kube.CoreV1().Secrets(member.SystemNamespace)
	if res, ok := StoredExchange(ctx, c, o.ProviderID, o.Rule, grant); ok {
		// The provider's answer still stands (revoke marks it Revoked and removes the credential's rights):
		// otherwise the stored kubeconfig would be handed out dead.
		live, err := exchangeStands(ctx, c, reqs, res.Request, res.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("checking ExchangeRequest %s/%s on provider %q: %w", tns, res.Request, o.ProviderID, err)
		}
		if live {
			return res, nil
		}
		c.Reporter().Warn("The stored exchange credential " + res.Request + " is no longer issued by provider " + o.ProviderID + ": asking for a new one")
		if err := objects.IgnoreNotFound(secrets.Delete(ctx, KubeconfigSecretName(o.ProviderID, o.Rule, grant), metav1.DeleteOptions{})); err != nil {
			return nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		res, err := requestExchangeOnce(ctx, c, provider, reqs, self.ClusterID, grant, o)
		if !errors.Is(err, errAskAnew) || attempt > 0 {
			return res, err
		}
		// The request of the waiting key was revoked: that key is never answered again.
		if err := objects.IgnoreNotFound(secrets.Delete(ctx, PendingKeySecretName(o.ProviderID, o.Rule, grant), metav1.DeleteOptions{})); err != nil {
			return nil, err
		}
	}
}

// errAskAnew says that the waiting key's request was revoked.
var errAskAnew = errors.New("the request of the waiting key was revoked")

// requestExchangeOnce leaves the exchange request for the waiting key (pending until the provider decides),
// or, once the provider issued its certificate, checks it and stores the credential.
func requestExchangeOnce(ctx context.Context, c *member.Cluster, provider *member.Cluster, reqs dynamicResource, consumerID, grant string, o Options) (*Result, error) {
	tns := member.TenantNamespace(consumerID)
	keyPEM, signer, err := ensureExchangeKey(ctx, c, o.ProviderID, o.Rule, grant, o.KeyAlgorithm)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(signer.Public())
	if err != nil {
		return nil, err
	}
	hash := RequestHash(o.Rule, o.Target, o.Scope, der)
	name := RequestName(o.Rule, hash)
	user := User(consumerID, hash)
	pending := &PendingError{ProviderID: o.ProviderID, ConsumerID: consumerID, Rule: o.Rule, Request: name, Target: o.Target, Scope: o.Scope}
	u, err := reqs.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if err := leaveRequest(ctx, c, provider, signer, tns, name, user, grant, o); err != nil {
			return nil, err
		}
		return nil, pending
	}
	if err != nil {
		return nil, fmt.Errorf("reading ExchangeRequest %s/%s on provider %q: %w", tns, name, o.ProviderID, err)
	}
	var req v1alpha1.ExchangeRequest
	if err := objects.FromUnstructured(u, &req); err != nil {
		return nil, err
	}
	switch req.Status.Phase {
	case ExchangeRefused:
		return nil, fmt.Errorf("exchange credential %s %w by provider %q: %s", name, member.ErrDenied, o.ProviderID, req.Status.Reason)
	case ExchangeRevoked:
		return nil, errAskAnew
	case ExchangeIssued:
	default:
		return nil, pending
	}
	cert, err := credential.ParseCertificate("status.certificate", req.Status.Certificate)
	if err != nil {
		return nil, err
	}
	if err := checkExchangeCertificate(cert, signer, user, c.CurrentTime()); err != nil {
		return nil, err
	}
	kc, err := exchangeKubeconfig(ctx, c, o, req.Status.Certificate, keyPEM)
	if err != nil {
		return nil, err
	}
	secrets := c.Kube.CoreV1().Secrets(member.SystemNamespace)
	if err := storeExchangeCredential(ctx, c, kc, name, user, grant, req.Status.Mode, cert.NotAfter, o); err != nil {
		return nil, err
	}
	if err := objects.IgnoreNotFound(secrets.Delete(ctx, PendingKeySecretName(o.ProviderID, o.Rule, grant), metav1.DeleteOptions{})); err != nil {
		return nil, err
	}
	// The older requests of this grant (earlier keys) are withdrawn: the provider's next answer prunes
	// their rights.
	if err := withdrawOlder(ctx, reqs, grant, name); err != nil {
		c.Reporter().Warn(fmt.Sprintf("Withdrawing the older ExchangeRequests of %s in %s: %v", name, tns, err))
	}
	return &Result{Request: name, Kubeconfig: kc, User: user, NotAfter: cert.NotAfter}, nil
}

// leaveRequest leaves a new ExchangeRequest for the waiting key on the provider: the CSR of the grant's
// user, the rule, the target and the scope, for the provider's administrator to list and decide on.
func leaveRequest(ctx context.Context, c, provider *member.Cluster, signer crypto.Signer, tns, name, user, grant string, o Options) error {
	csrPEM, err := credential.NewCSR(user, signer)
	if err != nil {
		return err
	}
	obj := &v1alpha1.ExchangeRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.ExchangeRequestKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tns,
			Labels: map[string]string{member.LabelManagedBy: member.ManagedBy, member.LabelExchange: grant}},
		Spec: v1alpha1.ExchangeRequestSpec{Rule: o.Rule, Target: toExchangeTarget(o.Target), Scope: ToExchangeScope(o.Scope), CSR: csrPEM},
	}
	nu, err := objects.ToUnstructured(obj)
	if err != nil {
		return err
	}
	unstructured.RemoveNestedField(nu.Object, "status")
	if _, err := handshake.CreateCounted(ctx, c, provider, v1alpha1.ExchangeRequestGVR, nu); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("leaving ExchangeRequest %s/%s on provider %q: %w", tns, name, o.ProviderID, err)
	}
	c.Reporter().Info("ExchangeRequest " + name + c.Said(" left", " would be left") + " in " + tns + " on provider " + o.ProviderID)
	return nil
}

// checkExchangeCertificate takes the provider's certificate only for the waiting key, as the grant's user,
// for client authentication, unexpired.
func checkExchangeCertificate(cert *x509.Certificate, signer crypto.Signer, user string, now time.Time) error {
	switch {
	case !credential.SamePublicKey(cert.PublicKey, signer.Public()):
		return errors.New("status.certificate: is not for the waiting key")
	case cert.Subject.CommonName != user:
		return fmt.Errorf("status.certificate: is for user %q, the waiting key is for %q", member.Truncate(cert.Subject.CommonName), user)
	case !credential.ClientAuth(cert):
		return errors.New("status.certificate: is not valid for client authentication")
	case !now.Before(cert.NotAfter):
		return fmt.Errorf("status.certificate: expired at %s", cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

// storeExchangeCredential stores the exchange credential's kubeconfig in its Secret, with the user, the
// request and the mode it answers, and records the import in an audit Event.
func storeExchangeCredential(ctx context.Context, c *member.Cluster, kc []byte, name, user, grant, mode string, notAfter time.Time, o Options) error {
	secrets := c.Kube.CoreV1().Secrets(member.SystemNamespace)
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: KubeconfigSecretName(o.ProviderID, o.Rule, grant), Namespace: member.SystemNamespace,
			Labels: exchangeLabels(o.ProviderID, grant), Annotations: map[string]string{handshake.UserAnnotation: user, AnnotationExchangeRequest: name, AnnotationExchangeMode: mode}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{handshake.KubeconfigKey: kc},
	}
	if _, err := secrets.Create(ctx, sec, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		if _, err := secrets.Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("storing Secret %s/%s: %w", member.SystemNamespace, sec.Name, err)
		}
	} else if err != nil {
		return fmt.Errorf("storing Secret %s/%s: %w", member.SystemNamespace, sec.Name, err)
	}
	c.Reporter().Info("Exchange credential " + name + c.Said(" stored", " would be stored") + " in Secret " + member.SystemNamespace + "/" + sec.Name)
	handshake.Audit(ctx, c, handshake.IdentityObject(o.ProviderID, member.IdentityName(o.ProviderID)), handshake.EventImported,
		"exchange credential "+name+" (rule "+o.Rule+", acting as "+o.Target.User+") on provider "+o.ProviderID+" stored in Secret "+sec.Name,
		&handshake.Credential{User: user, NotAfter: notAfter})
	return nil
}

// dynamicResource is the part of a namespaced dynamic client the exchange uses.
type dynamicResource interface {
	Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
	List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error)
	Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
	Delete(context.Context, string, metav1.DeleteOptions, ...string) error
}

// withdrawOlder deletes the consumer's requests of a grant other than keep.
func withdrawOlder(ctx context.Context, reqs dynamicResource, grant, keep string) error {
	l, err := reqs.List(ctx, metav1.ListOptions{LabelSelector: member.LabelExchange + "=" + grant})
	if err != nil {
		return err
	}
	var errs []error
	for _, it := range l.Items {
		if it.GetName() != keep {
			errs = append(errs, objects.IgnoreNotFound(reqs.Delete(ctx, it.GetName(), metav1.DeleteOptions{})))
		}
	}
	return errors.Join(errs...)
}

// exchangeKubeconfig builds the credential's kubeconfig: the pairing's way to the provider (server, CA,
// proxy), the issued certificate and the key, acting as the target.
func exchangeKubeconfig(ctx context.Context, c *member.Cluster, o Options, certPEM, keyPEM []byte) ([]byte, error) {
	pairing, err := handshake.GetKubeconfig(ctx, c, o.ProviderID)
	if err != nil {
		return nil, err
	}
	server, ca, proxy, err := kubeconfig.Endpoint(pairing)
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig stored for provider %q: %w", o.ProviderID, err)
	}
	kc, err := kubeconfig.Build(kubeconfig.Params{Name: o.ProviderID + "-exchange-" + o.Rule, Server: server, CA: ca, ProxyURL: proxy,
		CertPEM: certPEM, KeyPEM: keyPEM})
	if err != nil {
		return nil, err
	}
	// A namespaced scope's first namespace is the kubeconfig's default, so that kubectl's plain requests
	// land where the credential may act.
	if len(o.Scope.Namespaces) > 0 {
		if kc, err = kubeconfig.WithNamespace(kc, o.Scope.Namespaces[0]); err != nil {
			return nil, err
		}
	}
	return kubeconfig.Impersonate(kc, o.Target.User, o.Target.Groups, o.Target.UID)
}

// exchangeStands tells whether the provider's answer to a request still holds the certificate of a
// stored kubeconfig.
func exchangeStands(ctx context.Context, c *member.Cluster, reqs dynamicResource, name string, kc []byte) (bool, error) {
	if name == "" {
		return false, nil
	}
	u, err := reqs.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var req v1alpha1.ExchangeRequest
	if err := objects.FromUnstructured(u, &req); err != nil {
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

// ensureExchangeKey returns the key waiting for a grant's certificate, creating it if none waits.
func ensureExchangeKey(ctx context.Context, c *member.Cluster, providerID, rule, grant, alg string) (keyPEM []byte, signer crypto.Signer, err error) {
	secrets := c.Kube.CoreV1().Secrets(member.SystemNamespace)
	name := PendingKeySecretName(providerID, rule, grant)
	existing, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		if s, perr := handshake.ParseSigner(existing.Data[handshake.PrivateKeyKey]); perr == nil {
			return existing.Data[handshake.PrivateKeyKey], s, nil
		}
	} else if !apierrors.IsNotFound(err) {
		return nil, nil, err
	}
	s, err := credential.NewClientKey(alg)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(s)
	if err != nil {
		return nil, nil, err
	}
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: member.SystemNamespace, Labels: exchangeLabels(providerID, grant)},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{handshake.PrivateKeyKey: keyPEM},
	}
	if existing != nil && existing.Name != "" {
		sec.ResourceVersion = existing.ResourceVersion
		_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
	} else {
		_, err = secrets.Create(ctx, sec, metav1.CreateOptions{})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("storing the exchange credential's key in Secret %s/%s: %w", member.SystemNamespace, name, err)
	}
	return keyPEM, s, nil
}

func toExchangeTarget(t Target) v1alpha1.ExchangeTarget {
	return v1alpha1.ExchangeTarget{User: t.User, Groups: t.Groups, UID: t.UID}
}

// FromExchangeTarget is the rule target a request records.
func FromExchangeTarget(t v1alpha1.ExchangeTarget) Target {
	return Target{User: t.User, Groups: t.Groups, UID: t.UID}
}

// exchangeSelector selects a consumer's exchange objects on the provider.
func exchangeSelector(consumerID string) string {
	return labels.SelectorFromSet(member.TenantLabels(consumerID)).String() + "," + member.LabelExchange
}

// Binding is one binding of an exchange credential on the provider.
type Binding struct {
	kind, namespace, name, hash, user, target, consumerID string
}

// Bindings lists a consumer's exchange ClusterRoleBindings and RoleBindings (in every namespace)
// whose request hash keep selects.
func Bindings(ctx context.Context, c *member.Cluster, consumerID string, keep func(hash string) bool) ([]Binding, error) {
	return listBindings(ctx, c, consumerID, exchangeSelector(consumerID), keep)
}

// allBindings lists every consumer's exchange ClusterRoleBindings and RoleBindings.
func allBindings(ctx context.Context, c *member.Cluster) ([]Binding, error) {
	sel := member.LabelManagedBy + "=" + member.ManagedBy + "," + member.LabelRole + "=" + member.RoleProvider + "," + member.LabelExchange
	return listBindings(ctx, c, "every consumer", sel, func(string) bool { return true })
}

func listBindings(ctx context.Context, c *member.Cluster, consumerID, selector string, keep func(hash string) bool) ([]Binding, error) {
	sel := metav1.ListOptions{LabelSelector: selector}
	var out []Binding
	for _, gvr := range []schema.GroupVersionResource{crbGVR, RoleBindingGVR} {
		l, err := c.Dynamic.Resource(gvr).List(ctx, sel)
		if err != nil {
			return nil, fmt.Errorf("listing the exchange %s of consumer %q: %w", gvr.Resource, consumerID, err)
		}
		for _, it := range l.Items {
			hash := it.GetLabels()[member.LabelExchange]
			if !keep(hash) {
				continue
			}
			b := Binding{kind: gvr.Resource, namespace: it.GetNamespace(), name: it.GetName(), hash: hash, target: it.GetAnnotations()[annotationExchangeTarget],
				consumerID: it.GetLabels()[member.LabelRemoteClusterID]}
			// Labels alone are not proof: a binding is a grant's only if it binds exactly the user of the
			// request its label names, as grantRBAC makes it.
			subjects, _, _ := unstructured.NestedSlice(it.Object, "subjects")
			if len(subjects) != 1 {
				continue
			}
			if m, ok := subjects[0].(map[string]any); ok && m["kind"] == rbacv1.UserKind {
				b.user, _ = m["name"].(string)
			}
			if b.user == "" || b.user != User(b.consumerID, hash) || !strings.HasPrefix(b.name, "federate-exchange-") {
				continue
			}
			out = append(out, b)
		}
	}
	return out, nil
}

// Cut is who a consumer's exchange bindings let act as whom: the users to record as revoked and
// confirm refused.
func Cut(bindings []Binding) []handshake.BoundUser {
	var cut []handshake.BoundUser
	for _, b := range bindings {
		if b.user != "" && !slices.ContainsFunc(cut, func(u handshake.BoundUser) bool { return u.User == b.user }) {
			cut = append(cut, handshake.BoundUser{User: b.user, Groups: []string{member.TenantGroup, "system:authenticated"}, Target: b.target})
		}
	}
	return cut
}

// deleteExchangeRBAC deletes bindings, all at once, then the ClusterRoles of the same requests. The
// caller records their users as revoked first.
func deleteExchangeRBAC(ctx context.Context, c *member.Cluster, consumerID string, bindings []Binding) error {
	hashes := map[string]bool{}
	jobs := make([]func() error, len(bindings))
	for i, b := range bindings {
		hashes[b.hash] = true
		gvr := crbGVR
		if b.kind == "rolebindings" {
			gvr = RoleBindingGVR
		}
		jobs[i] = func() error {
			return objects.IgnoreNotFound(c.Dynamic.Resource(gvr).Namespace(b.namespace).Delete(ctx, b.name, metav1.DeleteOptions{}))
		}
	}
	if err := parallel.All(jobs...); err != nil {
		return fmt.Errorf("removing the exchange bindings of consumer %q: %w", consumerID, err)
	}
	sel := slices.Sorted(maps.Keys(hashes))
	if len(sel) == 0 {
		return nil
	}
	roles := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(member.TenantLabels(consumerID)).String() + "," + member.LabelExchange + " in (" + strings.Join(sel, ",") + ")"}
	if err := objects.IgnoreNotFound(c.Dynamic.Resource(crGVR).DeleteCollection(ctx, metav1.DeleteOptions{}, roles)); err != nil {
		return fmt.Errorf("removing the exchange ClusterRoles of consumer %q: %w", consumerID, err)
	}
	return nil
}

// Resolution is what the rules give a user reaching a provider.
type Resolution struct {
	Rule Rule
	// Target is who the user acts as; nil means the pairing's own identity (a privileged rule).
	Target *Target
}

// ErrNoExchangeRule says that no rule matches: nothing is handed out.
var ErrNoExchangeRule = errors.New("no identity-exchange rule matches")

// ResolveExchange (consumer) finds the rule that decides for req among the stored rules and, for an
// External rule, asks its service. Any failure refuses: a lower rule is never tried instead.
func ResolveExchange(ctx context.Context, c *member.Cluster, req Request, client Client) (*Resolution, error) {
	cfg, _, err := Rules(ctx, c)
	if err != nil {
		return nil, err
	}
	rule, ok := Resolve(cfg.Spec.ClientIdentityExchanger.Rules, req)
	if !ok {
		return nil, fmt.Errorf("%w user %q (groups %q, uid %q) reaching provider %q: nothing is handed out", ErrNoExchangeRule, req.User, req.Groups, req.UID, req.Cluster)
	}
	res := &Resolution{Rule: *rule}
	switch rule.Type {
	case StaticMapping:
		t := *rule.Target
		res.Target = &t
	case External:
		if res.Target, err = client.Exchange(ctx, rule, req); err != nil {
			return nil, err
		}
	}
	return res, nil
}
