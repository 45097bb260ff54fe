package dryrun

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// Strategy is the --dry-run value: none, client or server, as kubectl's.
type Strategy string

// The dry-run strategies.
const (
	None   Strategy = "none"
	Client Strategy = "client"
	Server Strategy = "server"
)

// Strategies are the values --dry-run accepts.
var Strategies = []string{string(None), string(Client), string(Server)}

// value is --dry-run's value: checked when parsed, like every enumerated flag.
type value struct{ r *Recorder }

func (v value) String() string {
	if v.r.Strategy == "" {
		return string(None)
	}
	return string(v.r.Strategy)
}

func (v value) Set(s string) error {
	if !slices.Contains(Strategies, s) {
		return fmt.Errorf("must be one of %s", strings.Join(Strategies, ", "))
	}
	v.r.Strategy = Strategy(s)
	return nil
}

func (value) Type() string { return "string" }

// AddFlag registers --dry-run on a command that changes a cluster, setting r's strategy. The bare flag
// means client, as kubectl's bare --dry-run did (kubectl has since removed the bare form; it is kept here
// because typing --dry-run alone and getting the safe mode is what a reader expects). Boolean values are
// refused, as by today's kubectl. complete completes the flag's values.
func AddFlag(cmd *cobra.Command, r *Recorder, complete cobra.CompletionFunc) {
	cmd.Flags().Var(value{r}, "dry-run", `Must be "none", "server", or "client". If client strategy, only print the objects that would be created, changed or deleted on each cluster, as YAML, without sending them. If server strategy, send every write as a server-side dry run (admission and RBAC answer), changing nothing`)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = string(Client)
	if complete != nil {
		_ = cmd.RegisterFlagCompletionFunc("dry-run", complete)
	}
}
