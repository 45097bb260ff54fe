package handshake

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

// A pairing keeps what it was given. Every choice that shapes a grant or a connection is recorded when the
// identity is issued (the Tenant's status on the provider: the role, the credential kind, the lifetime and
// its maximum, the sandbox, the API server and CA written into the consumer's kubeconfig; the Tenant's
// signed spec: the consumer's proxy URL), and a renewal or a re-run issues with the recorded values. A
// value given explicitly changes that one value; every change is reported as "setting: old -> new", and a
// change that widens what the tenant gets as a warning. Nothing changes behind the output's back.

// Settings of a pairing, as changes name them.
const (
	SettingAPIServer       = "API server"
	SettingCA              = "CA"
	SettingProxyURL        = "proxy URL"
	SettingLifetime        = "lifetime"
	SettingMaxLifetime     = "maximum lifetime"
	SettingRole            = "role"
	SettingCredential      = "credential"
	SettingPodSecurity     = "Pod Security level"
	SettingQuota           = "quota"
	SettingDefaultRequests = "default requests"
	SettingDefaultLimits   = "default limits"
	SettingPriorityClasses = "priority classes"
	SettingStorageClasses  = "storage classes"
	SettingTolerations     = "tolerations"
	SettingRuntimeClasses  = "runtime classes"
	SettingSchedulers      = "schedulers"
	SettingCSIDrivers      = "CSI drivers"
	SettingImageVolumes    = "image volumes"
)

// Given says which settings an issuance was given explicitly; the others keep their recorded values on a
// renewal. A nil Given keeps every recorded value.
type Given map[string]bool

// Change is one setting a renewal changed.
type Change struct {
	Setting  string `json:"setting"`
	Old, New string
	// Widens says the tenant gets more than before: a broader role, a longer lifetime, a higher limit or
	// quota, a laxer Pod Security level, more of a list it may use.
	Widens bool `json:"widens"`
}

func (c Change) String() string {
	s := c.Setting + ": " + orNone(c.Old) + " -> " + orNone(c.New)
	if c.Widens {
		s += " (widens what the tenant gets)"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// keepRecorded merges the recorded settings of a pairing into o (a renewal): a setting not given keeps its
// recorded value; a partial quota, default requests or default limits given is laid over the recorded
// ones. It returns o and what changed. o.Sandbox is not yet validated (no defaults merged).
func keepRecorded(o IssueOptions, rec *v1alpha1.Tenant) (IssueOptions, []Change, error) {
	st := rec.Status
	recSB, err := sandbox.FromStatus(st.Sandbox)
	if err != nil {
		return o, nil, fmt.Errorf("the sandbox recorded in Tenant %s/%s: %w", rec.Namespace, rec.Name, err)
	}
	m := &merge{given: o.Given}
	o = m.keepConnection(o, st)
	o = m.keepCredential(o, st)
	if st.Sandbox != nil {
		o.Sandbox = m.keepSandbox(o.Sandbox, recSB)
	}
	return o, m.changes, nil
}

// merge is one renewal's merge of recorded settings: which were given, and what changed.
type merge struct {
	given   map[string]bool
	changes []Change
}

// kept tells whether a setting keeps its recorded value (it was not given).
func (m *merge) kept(setting string) bool { return !m.given[setting] }

// note records a change of a setting, if it changed; widens says it gives the tenant more.
func (m *merge) note(setting, old, now string, widens bool) {
	if old != now {
		m.changes = append(m.changes, Change{Setting: setting, Old: old, New: now, Widens: widens})
	}
}

// keepConnection keeps the API server and CA written into the consumer's kubeconfig.
func (m *merge) keepConnection(o IssueOptions, st v1alpha1.TenantStatus) IssueOptions {
	if st.APIServer == "" {
		return o
	}
	if m.kept(SettingAPIServer) {
		o.APIServer, o.CA = st.APIServer, st.CA
	}
	m.note(SettingAPIServer, st.APIServer, o.APIServer, false)
	if !bytes.Equal(st.CA, o.CA) && st.APIServer == o.APIServer {
		m.note(SettingCA, fingerprintPEM(st.CA), fingerprintPEM(o.CA), false)
	}
	return o
}

// keepCredential keeps the role, the kind of credential and its lifetimes.
func (m *merge) keepCredential(o IssueOptions, st v1alpha1.TenantStatus) IssueOptions {
	if st.ClusterRole != "" {
		if m.kept(SettingRole) {
			o.ClusterRole = st.ClusterRole
		}
		m.note(SettingRole, st.ClusterRole, o.ClusterRole, true)
	}
	recCred := credential.CredentialCertificate
	switch st.Credential {
	case v1alpha1.CredentialToken:
		recCred = credential.CredentialToken
	case v1alpha1.CredentialFederated:
		recCred = credential.CredentialFederated
	}
	if m.kept(SettingCredential) {
		o.Credential = recCred
	} else if o.Credential != credential.CredentialAuto {
		m.note(SettingCredential, recCred, orCert(o.Credential), false)
	}
	if st.MaxLifetime != nil {
		if m.kept(SettingMaxLifetime) {
			o.MaxExpiration = st.MaxLifetime.Duration
		}
		m.note(SettingMaxLifetime, DurationText(st.MaxLifetime.Duration), DurationText(o.MaxExpiration),
			o.MaxExpiration == 0 || o.MaxExpiration > st.MaxLifetime.Duration)
	} else if o.MaxExpiration > 0 {
		m.note(SettingMaxLifetime, "", DurationText(o.MaxExpiration), false)
	}
	if st.Lifetime != nil {
		if m.kept(SettingLifetime) {
			o.Expiration = st.Lifetime.Duration
		}
		m.note(SettingLifetime, DurationText(st.Lifetime.Duration), DurationText(o.Expiration), o.Expiration > st.Lifetime.Duration)
	}
	return o
}

// keepSandbox keeps the sandbox's Pod Security level, its resource lists (a partial one given is laid
// over the recorded one) and its allowed lists.
func (m *merge) keepSandbox(sb, recSB sandbox.Options) sandbox.Options {
	if m.kept(SettingPodSecurity) || sb.PodSecurity == "" {
		sb.PodSecurity = recSB.PodSecurity
	}
	m.note(SettingPodSecurity, recSB.PodSecurity, sb.PodSecurity, levelRank(sb.PodSecurity) > levelRank(recSB.PodSecurity))
	for _, l := range []struct {
		setting  string
		rec, now *corev1.ResourceList
	}{
		{SettingQuota, &recSB.Quota, &sb.Quota},
		{SettingDefaultRequests, &recSB.DefaultRequests, &sb.DefaultRequests},
		{SettingDefaultLimits, &recSB.DefaultLimits, &sb.DefaultLimits},
	} {
		merged := (*l.rec).DeepCopy()
		if !m.kept(l.setting) {
			maps.Copy(merged, *l.now)
		}
		*l.now = merged
		widens := false
		for k, v := range merged {
			if old, ok := (*l.rec)[k]; ok && v.Cmp(old) > 0 {
				widens = true
			}
		}
		// Only the resources that change: the whole list (two dozen quotas) would hide them.
		was, now := changedResources(*l.rec, merged)
		m.note(l.setting, was, now, widens)
	}
	for _, l := range []struct {
		setting string
		rec     []string
		now     *[]string
		anyWhen bool // an empty list allows anything (storage classes)
	}{
		{SettingPriorityClasses, recSB.PriorityClasses, &sb.PriorityClasses, false},
		{SettingStorageClasses, recSB.StorageClasses, &sb.StorageClasses, true},
		{SettingTolerations, recSB.Tolerations, &sb.Tolerations, false},
		{SettingRuntimeClasses, recSB.RuntimeClasses, &sb.RuntimeClasses, false},
		{SettingSchedulers, recSB.Schedulers, &sb.Schedulers, false},
		{SettingCSIDrivers, recSB.CSIDrivers, &sb.CSIDrivers, false},
		{SettingImageVolumes, recSB.ImageVolumes, &sb.ImageVolumes, false},
	} {
		if m.kept(l.setting) {
			*l.now = slices.Clone(l.rec)
		}
		recList, nowList := sandbox.SortedSet(l.rec), sandbox.SortedSet(*l.now)
		widens := slices.ContainsFunc(nowList, func(v string) bool { return !slices.Contains(recList, v) }) ||
			(l.anyWhen && len(nowList) == 0 && len(recList) > 0)
		m.note(l.setting, strings.Join(recList, ","), strings.Join(nowList, ","), widens)
	}
	return sb
}

// changedResources is the resources whose amount differs between two lists, as each list has them.
func changedResources(rec, now corev1.ResourceList) (string, string) {
	was, is := corev1.ResourceList{}, corev1.ResourceList{}
	for name, q := range now {
		if old, ok := rec[name]; !ok || old.Cmp(q) != 0 {
			is[name] = q
			if ok {
				was[name] = old
			}
		}
	}
	for name, old := range rec {
		if _, ok := now[name]; !ok {
			was[name] = old
		}
	}
	return sandbox.FormatResourceList(sandbox.FormatResources(was)), sandbox.FormatResourceList(sandbox.FormatResources(is))
}

// capLifetime caps the lifetime an issuance asks for at the pairing's maximum, saying so.
func capLifetime(o IssueOptions, r member.Reporter) IssueOptions {
	if o.MaxExpiration > 0 && o.Expiration > o.MaxExpiration {
		r.Info(fmt.Sprintf("lifetime: %s asked, capped at the pairing's maximum %s", DurationText(o.Expiration), DurationText(o.MaxExpiration)))
		o.Expiration = o.MaxExpiration
	}
	return o
}

// ReportChanges writes each change: a widening one as a warning.
func ReportChanges(r member.Reporter, changes []Change) {
	for _, c := range changes {
		if c.Widens {
			r.Warn(c.String())
		} else {
			r.Info(c.String())
		}
	}
}

func levelRank(level string) int { return slices.Index(sandbox.PodSecurityLevels, level) }

func orCert(mode string) string {
	if mode == "" {
		return credential.CredentialCertificate
	}
	return mode
}

// DurationText writes a duration in whole days when it is one, else as Go does, without zero units.
func DurationText(d time.Duration) string {
	switch {
	case d == 0:
		return ""
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	return strings.TrimSuffix(s, "0m")
}

func fingerprintPEM(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return credential.Fingerprint(b)[:19]
}

// DurationPtr is d as an API duration; zero is unset.
func DurationPtr(d time.Duration) *metav1.Duration {
	if d == 0 {
		return nil
	}
	return &metav1.Duration{Duration: d}
}
