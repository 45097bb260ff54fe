package dryrun

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// A dry run ends successfully only when all that stopped it is dry-run stops: a real failure joined to a
// stop (renew --all where one provider is missing) keeps its error and its exit code.
func TestOnlyDryRunStopsEndADryRunSuccessfully(t *testing.T) {
	stop := func(at string) error { return &member.DryRunStop{At: at, Why: "no token"} }
	missing := errors.New(`provider "gone" not found`)
	for _, c := range []struct {
		name  string
		err   error
		stops []string
	}{
		{"nil", nil, nil},
		{"a stop", stop("a"), []string{"stopped at a: no token"}},
		{"a wrapped stop", fmt.Errorf("renewing p1: %w", stop("a")), []string{"stopped at a: no token"}},
		{"stops joined", errors.Join(stop("a"), fmt.Errorf("p2: %w", stop("b"))), []string{"stopped at a: no token", "stopped at b: no token"}},
		{"a failure", missing, nil},
		{"a stop beside a failure", errors.Join(stop("a"), missing), nil},
		{"a failure wrapping a joined stop and failure", fmt.Errorf("renew --all: %w", errors.Join(fmt.Errorf("p1: %w", stop("a")), missing)), nil},
	} {
		stops, ok := Stops(c.err)
		if ok != (c.stops != nil) || !slices.Equal(stops, c.stops) {
			t.Errorf("%s: Stops = %q, %v; want %q", c.name, stops, ok, c.stops)
		}
	}
}
