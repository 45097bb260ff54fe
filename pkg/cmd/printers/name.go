package printers

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kprinters "k8s.io/cli-runtime/pkg/printers"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil/flagutil"
)

// NameFlag is -o, --output on a command whose output is a result line about objects it changed (cordon,
// revoke, create nonce, import identity): "name" alone, as on kubectl delete, rollout restart or
// annotate, whose only other form is their line. The command holds no whole object to print as json or
// yaml (it changed labels, bindings and a status), so it offers none rather than print half of one.
type NameFlag struct{ value string }

// nameFormats are the formats a NameFlag accepts.
var nameFormats = []string{"name"}

// AddNameFlag registers -o, --output on cmd; human says what the command prints without it.
func AddNameFlag(cmd *cobra.Command, human string) *NameFlag {
	n := &NameFlag{}
	cmd.Flags().VarP(nameValue{n}, "output", "o", "Output format (default: "+human+"). One of: (name), which prints each object changed as kind.group/name")
	_ = cmd.RegisterFlagCompletionFunc("output", flagutil.CompleteValues(nameFormats))
	return n
}

// Name tells whether -o name was asked for.
func (n *NameFlag) Name() bool { return n.value == "name" }

// Ref is an object a command changed, as -o name prints it.
type Ref struct {
	APIVersion, Kind, Name string
}

// Print writes each ref as kubectl's -o name does (kind.group/name; kind/name in the core group), through
// cli-runtime's NamePrinter.
func (n *NameFlag) Print(w io.Writer, refs ...Ref) error {
	p := &kprinters.NamePrinter{ShortOutput: true}
	for _, r := range refs {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		u.SetAPIVersion(r.APIVersion)
		u.SetKind(r.Kind)
		u.SetName(r.Name)
		if err := p.PrintObj(u, w); err != nil {
			return err
		}
	}
	return nil
}

type nameValue struct{ n *NameFlag }

func (v nameValue) String() string { return v.n.value }
func (v nameValue) Type() string   { return "string" }
func (v nameValue) Set(s string) error {
	if s != "name" {
		return fmt.Errorf("must be name (this command prints its result line, or with -o name the objects it changed)")
	}
	v.n.value = s
	return nil
}
