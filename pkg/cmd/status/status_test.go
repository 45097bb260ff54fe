package status

import (
	"errors"
	"testing"
	"time"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/status"
)

// The daily monitor (--expiring-within 720h) counts what renew renews: an exchange credential, which lasts
// 30 days and which renew leaves alone, would otherwise fail it every day.
func TestExpiringWithinCountsWhatRenewRenews(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	o := &Options{ExpiringWithin: 720 * time.Hour, now: func() time.Time { return now }}
	report := &status.Report{Credentials: []status.CredentialState{
		{RemoteClusterID: "gpu-farm", Role: member.RoleConsumer, Kind: status.KindControlPlane, NotAfter: at(89 * 24 * time.Hour)},
		{RemoteClusterID: "gpu-farm", Role: member.RoleConsumer, Kind: status.KindExchange, Name: "mapping-0123", NotAfter: at(29 * 24 * time.Hour)},
		{RemoteClusterID: "edge-1", Role: member.RoleProvider, Kind: status.KindExchange, Name: "mapping-0123", NotAfter: at(-time.Hour)},
	}}
	if err := o.verdict(report); err != nil {
		t.Errorf("exchange credentials within the window: %v, want exit 0", err)
	}

	report.Credentials = append(report.Credentials, status.CredentialState{RemoteClusterID: "gpu-farm", Role: member.RoleConsumer,
		Kind: status.KindResourceSlice, Name: "batch", NotAfter: at(10 * 24 * time.Hour)})
	var coded *cmdutil.CodedError
	if err := o.verdict(report); !errors.As(err, &coded) || coded.Code != cmdutil.ExitExpiring {
		t.Errorf("a resource slice within the window: %v, want exit %d", err, cmdutil.ExitExpiring)
	}
}
