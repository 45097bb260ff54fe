package status

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/internal/objects"
	"github.com/federate-dev/kubectl-federate/pkg/internal/parallel"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// Kinds of credential in a status report.
const (
	KindControlPlane  = "ControlPlane"  // a pairing's own identity
	KindResourceSlice = "ResourceSlice" // a resource slice's identity
	KindExchange      = "Exchange"      // an identity-exchange credential, acting as its target
	// Leftovers of pairings not finished: they show in status, with their age, so that nothing is
	// invisible; unauthenticate (or delete nonce) removes them.
	KindNonce      = "Nonce"      // provider: a nonce made for a consumer, not used yet
	KindPendingKey = "PendingKey" // consumer: a client key waiting for its certificate
)

// Phases of the leftovers.
const (
	PhasePending    = "Pending"    // waiting for the other side
	PhaseIncomplete = "Incomplete" // a provider's sandbox with no Tenant: a pairing that never finished
)

// CredentialState is one credential this cluster issued as a provider or holds as a consumer.
type CredentialState struct {
	RemoteClusterID string `json:"remoteClusterID"`
	// Role is this cluster's role: RoleProvider (it issued the credential to the remote consumer) or
	// RoleConsumer (it holds the credential on the remote provider).
	Role   string `json:"role"`
	Kind   string `json:"kind"`
	Name   string `json:"name,omitempty"`   // the resource slice, or the exchange credential (rule-hash)
	Target string `json:"target,omitempty"` // an exchange credential's target user
	// Mode is an exchange credential's: Constrained (held to its scope by the API server) or Unconstrained.
	Mode        string     `json:"mode,omitempty"`
	Credential  string     `json:"credential"` // Certificate or Token
	User        string     `json:"user,omitempty"`
	Namespace   string     `json:"namespace,omitempty"` // on the provider
	Phase       string     `json:"phase,omitempty"`
	NotAfter    *time.Time `json:"notAfter,omitempty"`
	PodSecurity string     `json:"podSecurity,omitempty"`
	Cordoned    bool       `json:"cordoned"` // provider: the consumer is cordoned here
	// Since is when a leftover (a nonce, a waiting key, an incomplete pairing) was made.
	Since *time.Time `json:"since,omitempty"`
	// Settings are what the pairing was given and a renewal keeps (settings.go), by setting name: on the
	// provider, what it grants; on the consumer, how it connects.
	Settings map[string]string `json:"settings,omitempty"`
	Check    *CredentialCheck  `json:"check,omitempty"`

	// Labels are the labels of the object the pairing is recorded in, which its administrator may set
	// (kubectl label): the provider's Tenant, the consumer's Identity. A slice's and an exchange
	// credential's rows carry their pairing's (its Tenant's or Identity's), so that one selector finds a
	// pairing's every row. A resource slice's own labels are not used: its tenant writes them.
	Labels map[string]string `json:"-"`

	secret    string             // consumer: the kubeconfig Secret in SystemNamespace
	federated *v1alpha1.Identity // consumer: a federated identity, proven through a token minted now
}

// CredentialCheck is what a SelfSubjectReview through a held credential answered.
type CredentialCheck struct {
	OK bool `json:"ok"`
	// State is CheckOK, CheckRevoked, CheckCordoned, CheckExpired, CheckUntrusted or CheckUnreachable.
	State string `json:"state"`
	User  string `json:"user,omitempty"`
	// Error says why the state is not ok.
	Error string `json:"error,omitempty"`
}

// States of a credential, as status --check proves them through it.
const (
	// CheckOK: the provider authorizes it for what it was issued for (creating pods in its namespace; an
	// exchange credential, acting as its target).
	CheckOK = "ok"
	// CheckRevoked: the provider no longer authenticates it, or authenticates it but authorizes it for
	// nothing it was issued for.
	CheckRevoked = "revoked"
	// CheckCordoned: authorized, but the provider's admission refuses its new workloads.
	CheckCordoned = "cordoned"
	// CheckExpired: its certificate or token has expired.
	CheckExpired = "expired"
	// CheckUnreachable: the provider did not answer (network, DNS, TLS), or the kubeconfig is unusable.
	CheckUnreachable = "unreachable"
	// CheckUntrusted: a federated identity whose tokens the provider does not take for its user: its
	// authenticator entry is not installed, not loaded, cannot fetch the issuer's keys, or differs.
	CheckUntrusted = "untrusted"
)

// Active tells whether the credential is meant to work (not revoked or denied).
func (s *CredentialState) Active() bool {
	return s.Phase != handshake.PhaseRevoked && s.Phase != grants.SliceDenied && s.Phase != PhasePending && s.Phase != PhaseIncomplete
}

// Renewable tells whether renew renews the credential: a pairing's identity or a resource slice's. An
// exchange credential is renewed by asking for it again, which the provider consents to again.
func (s *CredentialState) Renewable() bool {
	return s.Kind != KindExchange
}

// Report is every credential of every pairing this cluster takes part in.
type Report struct {
	ClusterID   string            `json:"clusterID"`
	Credentials []CredentialState `json:"credentials"`
	// Exports are the credentials this cluster holds written in other tools' formats (export), which
	// renew rewrites and unauthenticate deletes.
	Exports []handshake.ExportState `json:"exports,omitempty"`
}

// checkParallel bounds the SelfSubjectReviews of Status(check) in flight at once.
const checkParallel = 16

// checkTimeout bounds one credential's check: a provider that does not answer is reported, not waited on.
const checkTimeout = 10 * time.Second

// Status lists every credential of every pairing this cluster takes part in, in both roles, from three
// lists read at once (Tenants, ResourceSlices, Identities: the cost does not grow with the number of
// pairings). With check, each credential this cluster holds is proven through a SelfSubjectReview made
// with it, all at once within checkParallel.
func Status(ctx context.Context, c *member.Cluster, check bool) (*Report, error) {
	self, err := c.Load(ctx)
	if err != nil {
		return nil, err
	}
	sel := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{member.LabelManagedBy: member.ManagedBy}).String()}
	var tenants, slices, identities, issuedExchanges, heldExchanges, leftovers []CredentialState
	var exports []handshake.ExportState
	err = parallel.All(
		func() error { var err error; exports, err = handshake.Exports(ctx, c); return err },
		func() error { var err error; leftovers, err = leftoverStates(ctx, c); return err },
		func() error { var err error; tenants, err = tenantStates(ctx, c, sel); return err },
		func() error { var err error; slices, err = sliceStates(ctx, c); return err },
		func() error { var err error; identities, err = identityStates(ctx, c, sel); return err },
		func() error { var err error; issuedExchanges, err = issuedExchangeStates(ctx, c); return err },
		func() error { var err error; heldExchanges, err = heldExchangeStates(ctx, c); return err },
	)
	if err != nil {
		return nil, err
	}
	cordoned := map[string]bool{}
	for _, t := range tenants {
		cordoned[t.RemoteClusterID] = t.Cordoned
	}
	for i := range slices {
		slices[i].Cordoned = cordoned[slices[i].RemoteClusterID]
	}
	all := concat(tenants, slices, identities, issuedExchanges, heldExchanges, incomplete(leftovers, tenants))
	pairingLabels(all)
	out := &Report{ClusterID: self.ClusterID, Credentials: all, Exports: exports}
	if out.Credentials == nil {
		out.Credentials = []CredentialState{}
	}
	slicesSort(out.Credentials)
	if check {
		if err := Check(ctx, c, out.Credentials); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// pairingLabels gives each row without labels of its own those of its pairing's record: the Tenant
// (provider) or the pairing's Identity (consumer) of the same remote cluster.
func pairingLabels(all []CredentialState) {
	type pairing struct{ role, remote string }
	of := map[pairing]map[string]string{}
	for _, s := range all {
		if s.Kind == KindControlPlane && s.Labels != nil {
			of[pairing{s.Role, s.RemoteClusterID}] = s.Labels
		}
	}
	for i := range all {
		if all[i].Labels == nil {
			all[i].Labels = of[pairing{all[i].Role, all[i].RemoteClusterID}]
		}
	}
}

func concat(parts ...[]CredentialState) []CredentialState {
	var out []CredentialState
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func slicesSort(s []CredentialState) {
	slices.SortFunc(s, func(a, b CredentialState) int {
		return cmp.Or(strings.Compare(a.RemoteClusterID, b.RemoteClusterID), strings.Compare(a.Role, b.Role),
			strings.Compare(a.Kind, b.Kind), strings.Compare(a.Name, b.Name))
	})
}

func tenantStates(ctx context.Context, c *member.Cluster, sel metav1.ListOptions) ([]CredentialState, error) {
	tenants, err := listTenants(ctx, c, sel)
	if err != nil {
		return nil, err
	}
	var out []CredentialState
	for i := range tenants {
		t := &tenants[i]
		s := CredentialState{RemoteClusterID: t.Spec.ClusterID, Role: member.RoleProvider, Kind: KindControlPlane, Credential: handshake.OrCertificate(t.Status.Credential),
			User: t.Status.User, Namespace: t.Namespace, Phase: t.Status.Phase, NotAfter: handshake.TimeOf(t.Status.NotAfter), Cordoned: t.Status.Cordoned,
			Settings: tenantSettings(t), Labels: t.Labels}
		if t.Status.Sandbox != nil {
			s.PodSecurity = t.Status.Sandbox.PodSecurity
		}
		out = append(out, s)
	}
	return out, nil
}

// sliceStates lists the slices this cluster granted as a provider: the ResourceSlices of tenant
// namespaces that it answered.
func sliceStates(ctx context.Context, c *member.Cluster) ([]CredentialState, error) {
	list, err := c.Dynamic.Resource(v1alpha1.ResourceSliceGVR).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing ResourceSlices: %w", err)
	}
	var out []CredentialState
	for i := range list.Items {
		u := &list.Items[i]
		if !strings.HasPrefix(u.GetNamespace(), member.TenantNamespacePrefix) {
			continue // this cluster's own requests, as a consumer: its Identities say more
		}
		var s v1alpha1.ResourceSlice
		if err := objects.FromUnstructured(u, &s); err != nil {
			return nil, err
		}
		if s.Status.Phase != grants.SliceAccepted {
			continue // pending or denied: no credential was issued
		}
		out = append(out, CredentialState{RemoteClusterID: s.Spec.ClusterID, Role: member.RoleProvider, Kind: KindResourceSlice, Name: s.Spec.Slice,
			Credential: handshake.OrCertificate(s.Status.Credential), User: s.Status.User, Namespace: s.Status.Namespace, Phase: s.Status.Phase,
			NotAfter: handshake.TimeOf(s.Status.NotAfter), PodSecurity: s.Status.PodSecurity})
	}
	return out, nil
}

func identityStates(ctx context.Context, c *member.Cluster, sel metav1.ListOptions) ([]CredentialState, error) {
	list, err := c.Dynamic.Resource(v1alpha1.IdentityGVR).Namespace(member.SystemNamespace).List(ctx, sel)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing Identities: %w", err)
	}
	var out []CredentialState
	for i := range list.Items {
		var id v1alpha1.Identity
		if err := objects.FromUnstructured(&list.Items[i], &id); err != nil {
			return nil, err
		}
		kind := KindControlPlane
		if id.Spec.Type == v1alpha1.IdentityResource {
			kind = KindResourceSlice
		}
		s := CredentialState{RemoteClusterID: id.Spec.ClusterID, Role: member.RoleConsumer, Kind: kind, Name: id.Spec.ResourceSlice,
			Credential: handshake.OrCertificate(id.Spec.Credential), User: id.Status.User, Namespace: id.Spec.Namespace,
			NotAfter: handshake.TimeOf(id.Status.NotAfter), secret: id.Status.KubeconfigSecret, Labels: id.Labels,
			Settings: nonEmpty(map[string]string{handshake.SettingAPIServer: id.Spec.APIServer, handshake.SettingProxyURL: id.Spec.ProxyURL})}
		if id.Spec.Credential == v1alpha1.CredentialFederated && id.Spec.Federated != nil {
			s.federated = &id
			s.Settings[SettingServiceAccount] = id.Spec.Federated.ServiceAccount.Namespace + ":" + id.Spec.Federated.ServiceAccount.Name
		}
		out = append(out, s)
	}
	return out, nil
}

// Check proves each credential of states this cluster holds through it: not that it authenticates (a
// revoked certificate still does) but that the provider authorizes it for what it was issued for
// (checkOne). states are rows of a report of Status, or some of them: a caller that shows a few proves
// only those.
func Check(ctx context.Context, c *member.Cluster, states []CredentialState) error {
	sel := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{member.LabelManagedBy: member.ManagedBy, member.LabelRole: member.RoleConsumer}).String()}
	secrets, err := c.Kube.CoreV1().Secrets(member.SystemNamespace).List(ctx, sel)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("listing the kubeconfig Secrets: %w", err)
	}
	kubeconfigs := map[string][]byte{}
	if err == nil {
		for _, s := range secrets.Items {
			kubeconfigs[s.Name] = s.Data[handshake.KubeconfigKey]
		}
	}
	sem := make(chan struct{}, checkParallel)
	var wg sync.WaitGroup
	for i := range states {
		s := &states[i]
		if s.Role != member.RoleConsumer || s.Kind == KindPendingKey {
			continue // a key waiting for its certificate is no credential yet: nothing to prove
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if s.federated != nil {
				s.Check = checkFederated(ctx, c, s)
				return
			}
			s.Check = checkOne(ctx, c, s, kubeconfigs[s.secret])
		}()
	}
	wg.Wait()
	return nil
}

func checkOne(ctx context.Context, c *member.Cluster, s *CredentialState, kc []byte) *CredentialCheck {
	if len(kc) == 0 {
		return &CredentialCheck{State: CheckUnreachable, Error: fmt.Sprintf("no kubeconfig in Secret %s/%s", member.SystemNamespace, s.secret)}
	}
	if s.NotAfter != nil && !c.CurrentTime().Before(*s.NotAfter) {
		return &CredentialCheck{State: CheckExpired, Error: "expired at " + s.NotAfter.UTC().Format(time.RFC3339)}
	}
	as, err := handshake.Dial(c, kc)
	if err != nil {
		return &CredentialCheck{State: CheckUnreachable, Error: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	return checkThrough(ctx, as, s)
}

// checkThrough proves the credential's rights through as, a provider connection made with it.
func checkThrough(ctx context.Context, as *member.Cluster, s *CredentialState) *CredentialCheck {
	if s.Kind == KindExchange {
		// Acting as its target proves the impersonation rights it was issued: the request is refused if
		// the provider took them away.
		r, err := as.Kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return failedCheck(err)
		}
		if got := r.Status.UserInfo.Username; got != s.Target {
			return &CredentialCheck{State: CheckRevoked, User: got, Error: fmt.Sprintf("acts as %q, not its target %q", got, s.Target)}
		}
		return &CredentialCheck{OK: true, State: CheckOK, User: s.Target}
	}
	// A pairing's or a slice's identity exists to run workloads in its namespace: the provider must
	// authorize creating pods there, and its admission must not refuse them (cordon).
	var review *authzv1.SelfSubjectAccessReview
	var rerr, perr error
	_ = parallel.All(
		func() error {
			review, rerr = as.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authzv1.ResourceAttributes{Namespace: s.Namespace, Verb: "create", Resource: "pods"}}}, metav1.CreateOptions{})
			return nil
		},
		func() error {
			_, perr = as.Kube.CoreV1().Pods(s.Namespace).Create(ctx, CordonProbe(s.Namespace), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return nil
		},
	)
	switch {
	case rerr != nil:
		return failedCheck(rerr)
	case !review.Status.Allowed:
		return &CredentialCheck{State: CheckRevoked, User: s.User, Error: fmt.Sprintf("authenticates, but may not create pods in %s: authorized for nothing it was issued for", s.Namespace)}
	case perr != nil && strings.Contains(perr.Error(), sandbox.SandboxName+"-cordon"):
		return &CredentialCheck{State: CheckCordoned, User: s.User, Error: "the provider cordoned this consumer: it may not start new workloads"}
	}
	return &CredentialCheck{OK: true, State: CheckOK, User: s.User}
}

// failedCheck reads why a request through a credential failed.
func failedCheck(err error) *CredentialCheck {
	switch {
	case apierrors.IsUnauthorized(err):
		return &CredentialCheck{State: CheckRevoked, Error: "the provider no longer authenticates it (401 Unauthorized)"}
	case apierrors.IsForbidden(err):
		return &CredentialCheck{State: CheckRevoked, Error: "authenticates, but is refused what it was issued for: " + err.Error()}
	}
	return &CredentialCheck{State: CheckUnreachable, Error: err.Error()}
}

// issuedExchangeStates lists the exchange credentials this cluster issued as a provider, from its own
// records of what it granted and the RBAC that grants it, never from the requests, whose tenants may
// delete them or make them again without their answers.
func issuedExchangeStates(ctx context.Context, c *member.Cluster) ([]CredentialState, error) {
	granted, err := exchange.Granted(ctx, c)
	if err != nil {
		return nil, err
	}
	out := make([]CredentialState, 0, len(granted))
	for _, g := range granted {
		out = append(out, CredentialState{RemoteClusterID: g.ConsumerID, Role: member.RoleProvider, Kind: KindExchange, Name: g.Name, Target: g.User,
			Mode: g.Mode, Credential: v1alpha1.CredentialCertificate, User: g.Credential, Phase: g.Phase, NotAfter: g.NotAfter})
	}
	return out, nil
}

// heldExchangeStates lists the exchange credentials this cluster holds as a consumer, from their
// kubeconfig Secrets.
func heldExchangeStates(ctx context.Context, c *member.Cluster) ([]CredentialState, error) {
	list, err := c.Kube.CoreV1().Secrets(member.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: member.LabelExchange + "," + member.LabelRole + "=" + member.RoleConsumer})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the exchange credentials: %w", err)
	}
	var out []CredentialState
	for _, sec := range list.Items {
		kc := sec.Data[handshake.KubeconfigKey]
		if len(kc) == 0 {
			continue // a key waiting for its certificate
		}
		s := CredentialState{RemoteClusterID: sec.Labels[member.LabelRemoteClusterID], Role: member.RoleConsumer, Kind: KindExchange, Name: sec.Annotations[exchange.AnnotationExchangeRequest],
			Mode: sec.Annotations[exchange.AnnotationExchangeMode], Credential: v1alpha1.CredentialCertificate, secret: sec.Name}
		if certPEM, err := kubeconfig.ClientCertificate(kc); err == nil {
			if cert, err := credential.ParseCertificate("certificate", certPEM); err == nil {
				s.User, s.NotAfter = cert.Subject.CommonName, handshake.TimeOf(&metav1.Time{Time: cert.NotAfter})
			}
		}
		s.Target = kubeconfig.Impersonated(kc)
		out = append(out, s)
	}
	return out, nil
}

// leftoverStates lists what unfinished pairings left: unused nonces (provider), keys waiting for their
// certificate (consumer), and sandbox namespaces (provider), of which incomplete keeps those with no
// Tenant.
func leftoverStates(ctx context.Context, c *member.Cluster) ([]CredentialState, error) {
	var nonces []nonce.Unused
	var keys *corev1.SecretList
	var sandboxes *corev1.NamespaceList
	err := parallel.All(
		func() error {
			var err error
			nonces, err = c.Nonces().ListUnused(ctx)
			return objects.IgnoreNotFound(err)
		},
		func() error {
			var err error
			keys, err = c.Kube.CoreV1().Secrets(member.SystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: member.LabelManagedBy + "=" + member.ManagedBy + "," + member.LabelRole + "=" + member.RoleConsumer})
			return objects.IgnoreNotFound(err)
		},
		func() error {
			var err error
			sandboxes, err = c.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: member.LabelManagedBy + "=" + member.ManagedBy + "," + member.LabelRole + "=" + member.RoleProvider})
			return err
		},
	)
	if err != nil {
		return nil, fmt.Errorf("listing the leftovers of unfinished pairings: %w", err)
	}
	var out []CredentialState
	for _, n := range nonces {
		since, exp := n.Created, n.ExpiresAt
		out = append(out, CredentialState{RemoteClusterID: n.ConsumerID, Role: member.RoleProvider, Kind: KindNonce, Phase: PhasePending, Since: &since, NotAfter: &exp})
	}
	if keys != nil {
		for _, sec := range keys.Items {
			if !strings.HasSuffix(sec.Name, "-pending-key") {
				continue
			}
			since := sec.CreationTimestamp.Time
			out = append(out, CredentialState{RemoteClusterID: sec.Labels[member.LabelRemoteClusterID], Role: member.RoleConsumer, Kind: KindPendingKey,
				Name: strings.TrimSuffix(sec.Name, "-pending-key"), Phase: PhasePending, Since: &since})
		}
	}
	if sandboxes != nil {
		for _, ns := range sandboxes.Items {
			if sandbox.OwnerOf(ns.Labels).Kind != member.KindTenant || ns.Name != member.TenantNamespace(ns.Labels[member.LabelRemoteClusterID]) {
				continue
			}
			since := ns.CreationTimestamp.Time
			out = append(out, CredentialState{RemoteClusterID: ns.Labels[member.LabelRemoteClusterID], Role: member.RoleProvider, Kind: KindControlPlane,
				Namespace: ns.Name, Phase: PhaseIncomplete, Since: &since})
		}
	}
	return out, nil
}

// incomplete keeps, of the leftovers, the nonces and keys, and the sandboxes of consumers with no Tenant.
func incomplete(leftovers, tenants []CredentialState) []CredentialState {
	has := map[string]bool{}
	for _, t := range tenants {
		has[t.RemoteClusterID] = true
	}
	var out []CredentialState
	for _, l := range leftovers {
		if l.Phase == PhaseIncomplete && has[l.RemoteClusterID] {
			continue
		}
		out = append(out, l)
	}
	return out
}

// tenantSettings are the recorded settings of a provider's Tenant.
func tenantSettings(t *v1alpha1.Tenant) map[string]string {
	st := t.Status
	m := map[string]string{handshake.SettingAPIServer: st.APIServer, handshake.SettingProxyURL: t.Spec.ProxyURL, handshake.SettingRole: st.ClusterRole,
		handshake.SettingCredential: handshake.OrCertificate(st.Credential)}
	if st.Lifetime != nil {
		m[handshake.SettingLifetime] = handshake.DurationText(st.Lifetime.Duration)
	}
	if st.MaxLifetime != nil {
		m[handshake.SettingMaxLifetime] = handshake.DurationText(st.MaxLifetime.Duration)
	}
	if sb := st.Sandbox; sb != nil {
		m[handshake.SettingPodSecurity] = sb.PodSecurity
		m[handshake.SettingQuota] = sandbox.FormatResourceList(sb.Quota)
		m[handshake.SettingDefaultRequests] = sandbox.FormatResourceList(sb.DefaultRequests)
		m[handshake.SettingDefaultLimits] = sandbox.FormatResourceList(sb.DefaultLimits)
		for k, l := range map[string][]string{handshake.SettingPriorityClasses: sb.PriorityClasses, handshake.SettingStorageClasses: sb.StorageClasses,
			handshake.SettingTolerations: sb.Tolerations, handshake.SettingRuntimeClasses: sb.RuntimeClasses, handshake.SettingSchedulers: sb.Schedulers,
			handshake.SettingCSIDrivers: sb.CSIDrivers, handshake.SettingImageVolumes: sb.ImageVolumes} {
			m[k] = strings.Join(l, ",")
		}
	}
	return nonEmpty(m)
}

func nonEmpty(m map[string]string) map[string]string {
	for k, v := range m {
		if v == "" {
			delete(m, k)
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// CordonProbe is a pod every other sandbox rule admits, marked for the cordon policy.
func CordonProbe(ns string) *corev1.Pod { return sandbox.CordonProbe(ns) }
