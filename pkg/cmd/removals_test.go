package cmd_test

import (
	"strings"
	"testing"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// A removal of a name this cluster has no record of fails like kubectl (NotFound, exit 1, the closest
// known name), changes nothing, and --ignore-not-found makes it succeed; a name removed before is
// "already", exit 0.
func TestRemovalsOfUnknownNames(t *testing.T) {
	w := cmdtest.PairedWorld(t)
	farm := []string{"--kubeconfig", "farm"}
	cases := []struct {
		name   string
		args   []string
		stderr []string
	}{
		{"revoke a typo", []string{"revoke", "--remote-cluster-id", "edgx"},
			[]string{`--remote-cluster-id: consumer "edgx" not found`, `did you mean "edge"?`, "--ignore-not-found"}},
		{"revoke namespace", []string{"revoke", "namespace", "team-x", "--remote-cluster-id", "edge"},
			[]string{`NAME: extra namespace "team-x" not found of consumer edge`}},
		{"revoke namespace of an unknown consumer", []string{"revoke", "namespace", "team-x", "--remote-cluster-id", "edgx"},
			[]string{`extra namespace "team-x" not found`}},
		{"delete resourceslice", []string{"delete", "resourceslice", "batch", "--remote-cluster-id", "edge"},
			[]string{`NAME: resource slice "batch" not found shared with edge`}},
		{"deny exchange", []string{"deny", "exchange", "rule-0123", "--remote-cluster-id", "edge", "--reason", "no"},
			[]string{`NAME: exchange request "rule-0123" not found of consumer edge`}},
		{"cordon", []string{"cordon", "tenant", "--remote-cluster-id", "edgx"}, []string{`consumer "edgx" not found`, `did you mean "edge"?`}},
		{"uncordon", []string{"uncordon", "tenant", "edgx"}, []string{`consumer "edgx" not found`}},
		{"drain", []string{"drain", "tenant", "--remote-cluster-id", "edgx"}, []string{`consumer "edgx" not found`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := cmdtest.Marks(w, "edge", "farm")
			cmdtest.Expect(t, w, w.Run(append(c.args, farm...)...), 1, nil, c.stderr, m)
			m = cmdtest.Marks(w, "edge", "farm")
			r := w.Run(append(append(c.args, farm...), "--ignore-not-found")...)
			cmdtest.Expect(t, w, r, 0, nil, nil, m)
			if r.Stdout != "" {
				t.Errorf("--ignore-not-found printed %q", r.Stdout)
			}
		})
	}
	// The real consumer is untouched by the typo'd revoke: revoke it, then again.
	cmdtest.Expect(t, w, w.Run("revoke", "--remote-cluster-id", "edge", "--kubeconfig", "farm"), 0, []string{"tenant.federate.dev/edge revoked"}, nil, nil)
	m := cmdtest.Marks(w, "farm")
	cmdtest.Expect(t, w, w.Run("revoke", "--remote-cluster-id", "edge", "--kubeconfig", "farm"), 0, []string{"tenant.federate.dev/edge already revoked"}, nil, m)
}

// cordon, uncordon and drain take --remote-cluster-id (and the positional ID), say "already" when nothing
// changes.
func TestCordonSaysAlready(t *testing.T) {
	w := cmdtest.PairedWorld(t)
	cmdtest.Expect(t, w, w.Run("cordon", "tenant", "--remote-cluster-id", "edge", "--kubeconfig", "farm"), 0, []string{"tenant/edge cordoned"}, nil, nil)
	cmdtest.Expect(t, w, w.Run("cordon", "tenant", "edge", "--kubeconfig", "farm"), 0, []string{"tenant/edge already cordoned"}, nil, nil)
	cmdtest.Expect(t, w, w.Run("uncordon", "tenant", "--remote-cluster-id", "edge", "--kubeconfig", "farm"), 0, []string{"tenant/edge uncordoned"}, nil, nil)
	cmdtest.Expect(t, w, w.Run("uncordon", "tenant", "--remote-cluster-id", "edge", "--kubeconfig", "farm"), 0, []string{"tenant/edge already uncordoned"}, nil, nil)
	cmdtest.Expect(t, w, w.Run("drain", "tenant", "--remote-cluster-id", "edge", "--kubeconfig", "farm"), 0, []string{"tenant/edge drained"}, nil, nil)
}

// unauthenticate with the kubeconfigs swapped fails, deletes nothing, and prints the command the right way
// round; a pairing never made is NotFound; one removed before is "already".
func TestUnauthenticateDirection(t *testing.T) {
	w := cmdtest.PairedWorld(t)
	m := cmdtest.Marks(w, "edge", "farm")
	cmdtest.Expect(t, w, w.Run("unauthenticate", "--kubeconfig", "farm", "--remote-kubeconfig", "edge"), 1, nil,
		[]string{`no pairing in which "farm" consumes from "edge"`, "run: kubectl federate unauthenticate --kubeconfig edge --remote-kubeconfig farm"}, m)
	cmdtest.Expect(t, w, w.Run("unauthenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "farm"), 0, nil, nil, nil)
	m = cmdtest.Marks(w, "edge", "farm")
	cmdtest.Expect(t, w, w.Run("unauthenticate", "--kubeconfig", "edge", "--remote-kubeconfig", "farm"), 0, nil, []string{"already removed"}, m)

	other := cmdtest.NewWorld(t, "a", "b")
	other.Init("a", "cl-a")
	other.Init("b", "cl-b")
	m = cmdtest.Marks(other, "a", "b")
	cmdtest.Expect(t, other, other.Run("unauthenticate", "--kubeconfig", "a", "--remote-kubeconfig", "b"), 1, nil, []string{`consumer "cl-a" not found`}, m)
	cmdtest.Expect(t, other, other.Run("unauthenticate", "--kubeconfig", "a", "--remote-kubeconfig", "b", "--ignore-not-found"), 0, nil, nil, m)
}

// A nonce made and never used shows in status with its age, and delete nonce removes it; again, NotFound.
func TestLeftoversShowAndGo(t *testing.T) {
	w := cmdtest.NewWorld(t, "farm")
	w.Init("farm", "farm")
	cmdtest.Expect(t, w, w.Run("create", "nonce", "--remote-cluster-id", "edge", "--kubeconfig", "farm"), 0, nil, nil, nil)
	cmdtest.Expect(t, w, w.Run("status", "--kubeconfig", "farm"), 0, []string{"edge", "Nonce", "Pending for "}, nil, nil)
	cmdtest.Expect(t, w, w.Run("status", "--kubeconfig", "farm", "--expiring-within", "30d"), 0, nil, nil, nil) // a nonce is no credential
	cmdtest.Expect(t, w, w.Run("delete", "nonce", "--remote-cluster-id", "edge", "--kubeconfig", "farm"), 0, []string{"nonce/edge deleted"}, nil, nil)
	m := cmdtest.Marks(w, "farm")
	cmdtest.Expect(t, w, w.Run("delete", "nonce", "--remote-cluster-id", "edge", "--kubeconfig", "farm"), 1, nil, []string{`unused nonce for consumer "edge" not found`}, m)
	if r := w.Run("status", "--kubeconfig", "farm"); strings.Contains(r.Stdout, "Nonce") {
		t.Errorf("status after delete nonce: %s", r)
	}
}

// unmesh over clusters never paired says which pairs were not found and exits 1, changing nothing;
// --ignore-not-found makes that 0.
func TestUnmeshOfPairsNeverMade(t *testing.T) {
	w := cmdtest.NewWorld(t, "a", "b")
	w.Init("a", "cl-a")
	w.Init("b", "cl-b")
	m := cmdtest.Marks(w, "a", "b")
	cmdtest.Expect(t, w, w.Run("unmesh", "--kubeconfigs", "a,b"), 1, []string{"not found"},
		[]string{"2 pair(s) not found, never paired: ", "cl-a -> cl-b", "cl-b -> cl-a", "--ignore-not-found"}, m)
	m = cmdtest.Marks(w, "a", "b")
	cmdtest.Expect(t, w, w.Run("unmesh", "--kubeconfigs", "a,b", "--ignore-not-found"), 0, []string{"not found"}, nil, m)
}
