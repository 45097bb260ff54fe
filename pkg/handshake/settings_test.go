package handshake

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/federate-dev/kubectl-federate/pkg/apis/federate/v1alpha1"
	"github.com/federate-dev/kubectl-federate/pkg/credential"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/sandbox"
)

func recordedTenant() *v1alpha1.Tenant {
	return &v1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: member.TenantNamespace("c")}, Status: v1alpha1.TenantStatus{
		User: "u", ClusterRole: "viewer-x", Credential: v1alpha1.CredentialToken, APIServer: "https://localhost:6443", CA: []byte("ca"),
		Lifetime: &metav1.Duration{Duration: 48 * time.Hour}, MaxLifetime: &metav1.Duration{Duration: 72 * time.Hour},
		Sandbox: &v1alpha1.SandboxStatus{PodSecurity: sandbox.PodSecurityRestricted, Quota: map[string]string{"pods": "20", "requests.cpu": "4"},
			DefaultLimits: map[string]string{"cpu": "300m", "memory": "256Mi"}, DefaultRequests: map[string]string{"cpu": "100m"},
			Tolerations: []string{"dedicated"}},
	}}
}

// A renewal with nothing given keeps every recorded setting and changes nothing.
func TestKeepRecordedKeepsEverything(t *testing.T) {
	o := IssueOptions{APIServer: "https://127.0.0.1:6443", Expiration: DefaultExpiration, ClusterRole: member.DefaultClusterRole, Credential: credential.CredentialCertificate}
	got, changes, err := keepRecorded(o, recordedTenant())
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) > 0 {
		t.Errorf("nothing given, yet changes %v", changes)
	}
	if got.APIServer != "https://localhost:6443" || string(got.CA) != "ca" || got.ClusterRole != "viewer-x" || got.Credential != credential.CredentialToken ||
		got.Expiration != 48*time.Hour || got.MaxExpiration != 72*time.Hour {
		t.Errorf("kept %+v", got)
	}
	if lim := got.Sandbox.DefaultLimits["cpu"]; lim.String() != "300m" || !slices.Equal(got.Sandbox.Tolerations, []string{"dedicated"}) ||
		got.Sandbox.PodSecurity != sandbox.PodSecurityRestricted {
		t.Errorf("kept sandbox %+v", got.Sandbox)
	}
}

// A setting given changes that one setting; widenings say so.
func TestKeepRecordedChangesWhatIsGiven(t *testing.T) {
	o := IssueOptions{APIServer: "https://127.0.0.1:6443", Expiration: 30 * 24 * time.Hour, ClusterRole: member.DefaultClusterRole,
		Sandbox: sandbox.Options{PodSecurity: sandbox.PodSecurityBaseline, DefaultLimits: sandbox.MustResources(map[string]string{"cpu": "1"})},
		Given:   Given{SettingLifetime: true, SettingRole: true, SettingPodSecurity: true, SettingDefaultLimits: true}}
	got, changes, err := keepRecorded(o, recordedTenant())
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range changes {
		lines = append(lines, c.String())
	}
	joined := strings.Join(lines, "\n")
	for _, want := range []string{
		"lifetime: 2d -> 30d (widens what the tenant gets)",
		"role: viewer-x -> federate-tenant (widens what the tenant gets)",
		"Pod Security level: restricted -> baseline (widens what the tenant gets)",
		"default limits: cpu=300m -> cpu=1 (widens what the tenant gets)",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("changes lack %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "API server") || got.APIServer != "https://localhost:6443" {
		t.Errorf("the API server was not given, yet: %s / %s", got.APIServer, joined)
	}
	// A lifetime over the recorded maximum is capped.
	if capped := capLifetime(got, member.Discard); capped.Expiration != 72*time.Hour {
		t.Errorf("capped lifetime %s, want the maximum 72h", capped.Expiration)
	}
	// Narrowing is a change, not a warning.
	o = IssueOptions{Expiration: 24 * time.Hour, Given: Given{SettingLifetime: true}}
	_, changes, _ = keepRecorded(o, recordedTenant())
	if len(changes) != 1 || changes[0].Widens || changes[0].String() != "lifetime: 2d -> 1d" {
		t.Errorf("a shorter lifetime: %v", changes)
	}
}
