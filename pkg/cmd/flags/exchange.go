package flags

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/exchange"
)

// ExchangeSource is the consumer's user an identity exchange is resolved for: --for-user, --for-group and
// --for-uid. They are not --user and --as: --user already names the kubeconfig user of the connection, and
// these assert who is asking, which the administrator running the command vouches for.
type ExchangeSource struct {
	User   string
	Groups []string
	UID    string
}

// AddFlags registers the flags on cmd.
func (s *ExchangeSource) AddFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.User, "for-user", "", "The consumer's user to resolve the identity-exchange rules for")
	cmd.Flags().StringArrayVar(&s.Groups, "for-group", nil, "A group of that user (repeat for more)")
	cmd.Flags().StringVar(&s.UID, "for-uid", "", "The UID of that user")
}

// Given tells whether any of the flags was set.
func (s *ExchangeSource) Given() bool {
	return s.User != "" || len(s.Groups) > 0 || s.UID != ""
}

// Validate checks the flags: a user, and no empty or control-character values.
func (s *ExchangeSource) Validate() error {
	if s.User == "" {
		return fmt.Errorf("--for-user: must not be empty")
	}
	check := func(flag, v string) error {
		switch {
		case v == "":
			return fmt.Errorf("%s: must not be empty", flag)
		case len(v) > 253:
			return fmt.Errorf("%s: is %d characters, at most 253 are allowed", flag, len(v))
		case strings.ContainsAny(v, "\x00\n\r"):
			return fmt.Errorf("%s %q: must not contain control characters", flag, v)
		}
		return nil
	}
	if err := check("--for-user", s.User); err != nil {
		return err
	}
	for _, g := range s.Groups {
		if err := check("--for-group", g); err != nil {
			return err
		}
	}
	if s.UID != "" {
		return check("--for-uid", s.UID)
	}
	return nil
}

// Request is the exchange request for reaching providerID.
func (s *ExchangeSource) Request(providerID string) exchange.Request {
	return exchange.Request{User: s.User, Groups: s.Groups, UID: s.UID, Cluster: providerID}
}

// PendingHint adds to a pending exchange what the provider's administrator runs.
func PendingHint(err error) error {
	var pending *exchange.PendingError
	if errors.As(err, &pending) {
		return fmt.Errorf("%w; the provider's administrator reviews it with: kubectl federate allow exchange --remote-cluster-id %s, and answers it with: kubectl federate allow exchange %s --remote-cluster-id %s; then run this again",
			err, pending.ConsumerID, pending.Request, pending.ConsumerID)
	}
	return err
}
