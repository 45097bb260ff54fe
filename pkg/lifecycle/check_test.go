package lifecycle

import (
	"testing"
	"time"

	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/status"
)

// status --check proves rights, not authentication: a pairing identity is ok while the provider lets it
// create pods in its namespace, cordoned while admission refuses its new pods, revoked once its binding
// is gone (a revoked certificate still authenticates), expired past its NotAfter.
func TestCheckProvesRights(t *testing.T) {
	consumer, provider := pairedFakes(t)
	consumer.Dial = func([]byte) (*member.Cluster, error) { return provider.Cluster, nil }
	state := func() *status.CredentialCheck {
		t.Helper()
		r, err := status.Status(t.Context(), consumer.Cluster, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range r.Credentials {
			if s.Role == member.RoleConsumer && s.Kind == status.KindControlPlane {
				return s.Check
			}
		}
		t.Fatalf("no held pairing identity in %+v", r.Credentials)
		return nil
	}
	if c := state(); c == nil || c.State != status.CheckOK || !c.OK {
		t.Fatalf("paired: %+v", c)
	}
	if _, err := Cordon(t.Context(), provider.Cluster, "consumer"); err != nil {
		t.Fatal(err)
	}
	if c := state(); c.State != status.CheckCordoned || c.OK {
		t.Errorf("cordoned: %+v", c)
	}
	if _, err := Uncordon(t.Context(), provider.Cluster, "consumer"); err != nil {
		t.Fatal(err)
	}
	if _, err := Revoke(t.Context(), provider.Cluster, "consumer"); err != nil {
		t.Fatal(err)
	}
	if c := state(); c.State != status.CheckRevoked || c.OK {
		t.Errorf("revoked: %+v", c)
	}
	consumer.Now = func() time.Time { return fakeNow.Add(400 * 24 * time.Hour) }
	if c := state(); c.State != status.CheckExpired {
		t.Errorf("expired: %+v", c)
	}
}
