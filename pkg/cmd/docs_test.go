package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/docgen"
)

// docs/reference is generated from the command tree; this fails when they drift (run `make docs`).
func TestReferenceDocsAreCurrent(t *testing.T) {
	root := NewRootCmd(genericiooptions.NewTestIOStreamsDiscard())
	want := docgen.Generate(root)
	dir := filepath.Join("..", "..", "docs", "reference")
	have, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	if len(have) != len(want) {
		t.Errorf("docs/reference has %d files, the command tree makes %d: run make docs", len(have), len(want))
	}
	for name, data := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != string(data) {
			t.Errorf("docs/reference/%s is stale: run make docs", name)
		}
	}
}

// Every command follows kubectl's help conventions.
func TestHelpConventions(t *testing.T) {
	root := NewRootCmd(genericiooptions.NewTestIOStreamsDiscard())
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			walk(s)
		}
		if c.Hidden || c.Name() == "help" || strings.HasPrefix(c.Name(), "__") || c.HasParent() && c.Parent().Name() == "completion" {
			return
		}
		p := c.CommandPath()
		if c.Short == "" || strings.HasSuffix(c.Short, ".") || strings.ToUpper(c.Short[:1]) != c.Short[:1] {
			t.Errorf("%s: Short %q must start uppercase and have no period", p, c.Short)
		}
		if c.Runnable() && c.HasParent() && !c.HasSubCommands() {
			if c.Example == "" {
				t.Errorf("%s: no Example", p)
			}
			if strings.Contains(c.Example, "$ ") {
				t.Errorf("%s: Example uses a $ prompt", p)
			}
		}
		if !c.HasParent() {
			return // the root's flags are cli-runtime's, worded by kubectl
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Usage == "" || strings.HasSuffix(f.Usage, ".") {
				t.Errorf("%s --%s: usage %q must be set and have no trailing period", p, f.Name, f.Usage)
			}
		})
	}
	walk(root)
}

// A command's help never names one of its own hidden flags: the reader could not use it (renew hides
// --credential, since it keeps the kind each credential was recorded with).
func TestHelpNamesNoHiddenFlag(t *testing.T) {
	root := NewRootCmd(genericiooptions.NewTestIOStreamsDiscard())
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			walk(s)
		}
		text := c.Long + "\n" + c.Example
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				text += "\n" + f.Usage
			}
		})
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden && strings.Contains(text, "--"+f.Name) {
				t.Errorf("%s: the help names the hidden flag --%s", c.CommandPath(), f.Name)
			}
		})
	}
	walk(root)
}

// Every command's --help fits HelpWidth columns: flag descriptions wrap, usage lines name the main flags
// only, long examples continue on a second line.
func TestHelpFitsWidth(t *testing.T) {
	root := NewRootCmd(genericiooptions.NewTestIOStreamsDiscard())
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		var buf strings.Builder
		c.SetOut(&buf)
		if err := c.Help(); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(buf.String(), "\n") {
			if len(line) > HelpWidth {
				t.Errorf("%s --help: a line of %d columns: %s", c.CommandPath(), len(line), line)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// kubectl's --as, --as-group and --request-timeout are offered on every command, as kubectl's help shows them.
func TestKubectlConnectionFlagsShown(t *testing.T) {
	root := NewRootCmd(genericiooptions.NewTestIOStreamsDiscard())
	for _, name := range []string{"as", "as-group", "request-timeout", "kubeconfig", "context"} {
		if fl := root.PersistentFlags().Lookup(name); fl == nil || fl.Hidden {
			t.Errorf("--%s: not offered in help", name)
		}
	}
}
