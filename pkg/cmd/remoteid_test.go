package cmd_test

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/federate-dev/kubectl-federate/pkg/cmd"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdtest"
)

// Every command with --remote-cluster-id or --cluster-id checks it when parsed, the same way: a value that
// is not a cluster ID is a usage error naming the flag and the value, before anything is read, whatever
// else the command needs.
func TestEveryClusterIDIsCheckedWhenParsed(t *testing.T) {
	w := cmdtest.NewWorld(t, "edge")
	root := cmd.NewRootCmd(genericiooptions.NewTestIOStreamsDiscard())
	type use struct {
		path []string
		flag string
	}
	var uses []use
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
		for _, flag := range []string{"remote-cluster-id", "cluster-id"} {
			if c.Runnable() && c.Flags().Lookup(flag) != nil {
				uses = append(uses, use{path, flag})
			}
		}
	}
	walk(root, nil)
	if len(uses) < 25 {
		t.Fatalf("found %d cluster ID flags: the walk is wrong", len(uses))
	}
	for _, u := range uses {
		before := w.Snapshot("edge")
		r := w.Run(append(u.path, "--kubeconfig", "edge", "--"+u.flag, "Bad_ID")...)
		if r.Code != 1 || !strings.Contains(r.Stderr, `error: --`+u.flag+` "Bad_ID": must be a DNS label`) ||
			!strings.Contains(r.Stderr, "-h' for help") || strings.Contains(r.Stderr, "invalid argument") {
			t.Errorf("%s --%s Bad_ID: %s", strings.Join(u.path, " "), u.flag, r)
		}
		if w.Snapshot("edge") != before {
			t.Errorf("%s with a bad --%s changed the cluster", strings.Join(u.path, " "), u.flag)
		}
	}
}

// Every --timeout is the one definition (cmdutil.TimeoutFlag): the same range, checked when parsed, and
// the same help.
func TestEveryTimeoutIsTheSameFlag(t *testing.T) {
	w := cmdtest.NewWorld(t, "edge")
	root := cmd.NewRootCmd(genericiooptions.NewTestIOStreamsDiscard())
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string{}, path...), sub.Name()))
		}
		if f := c.Flags().Lookup("timeout"); c.Runnable() && f != nil {
			paths = append(paths, path)
			if !strings.HasPrefix(f.Usage, "How long ") || !strings.HasSuffix(f.Usage, "may take before it is abandoned (exit code 124) (a duration such as 90m, 12h or 30d; from 1s to 1d)") {
				t.Errorf("%s --timeout: %q", strings.Join(path, " "), f.Usage)
			}
		}
	}
	walk(root, nil)
	if len(paths) < 8 {
		t.Fatalf("found %d commands with --timeout: the walk is wrong", len(paths))
	}
	for _, p := range paths {
		r := w.Run(append(p, "--kubeconfig", "edge", "--timeout", "0s")...)
		if r.Code != 1 || !strings.Contains(r.Stderr, `for "--timeout" flag: 0s is out of range: must be from 1s to 1d`) {
			t.Errorf("%s --timeout 0s: %s", strings.Join(p, " "), r)
		}
	}
}
