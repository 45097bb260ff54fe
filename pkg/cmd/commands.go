package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/accept"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/allow"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/authenticate"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/cordon"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/create"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/credential"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/deletecmd"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/deny"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/drain"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/export"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/generate"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/get"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/grant"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/importcmd"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/info"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/initialize"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/mesh"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/renew"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/request"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/revoke"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/status"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/unauthenticate"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/uncordon"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/unmesh"
	"github.com/federate-dev/kubectl-federate/pkg/cmd/verify"
)

// command is one of the root's subcommands: what the root's help shows of it, and how to build it.
type command struct {
	group, name, short string
	build              func(*cmdutil.Factory, genericiooptions.IOStreams) *cobra.Command
}

// commands are the handshake commands, in groups as the help shows them. Name and short description are
// repeated here so that the root can list a command without building it (TestLazyRootIsTheFullRoot holds
// them to the commands' own).
var commands = []command{
	{"oneshot", "authenticate", "Give this (consumer) cluster an identity on a provider cluster, in one step", authenticate.NewCmd},
	{"oneshot", "unauthenticate", "Revoke this (consumer) cluster's identity on a provider cluster and remove the pairing", unauthenticate.NewCmd},
	{"oneshot", "renew", "Renew every credential of a pairing with fresh keys and users (consumer and provider at once)", renew.NewCmd},
	{"oneshot", "mesh", "Pair N clusters in every direction, each a consumer of every other", mesh.NewCmd},
	{"oneshot", "unmesh", "Remove every pairing between N clusters, in both directions", unmesh.NewCmd},
	{"manual", "create", "Create a federation resource: a nonce, a resource slice, a resource slice class", create.NewCmd},
	{"manual", "get", "Print a federation value: a nonce, a kubeconfig, resource slices", get.NewCmd},
	{"manual", "generate", "Generate a document for the other cluster's administrator: a tenant or an identity", generate.NewCmd},
	{"manual", "import", "Import what the other cluster's administrator issued: an identity, a resource slice", importcmd.NewCmd},
	{"manual", "export", "Write a credential this cluster holds in the format a multi-cluster tool reads (consumer side)", export.NewCmd},
	{"manual", "credential", "Print, as an exec credential plugin, the credential this cluster holds on a provider (consumer side)", credential.NewCmd},
	{"manual", "revoke", "Take a consumer's rights away at once and stop what it runs (provider side)", revoke.NewCmd},
	{"grants", "accept", "Grant a consumer's request: a resource slice", accept.NewCmd},
	{"grants", "deny", "Refuse a consumer's request: a resource slice, an exchange credential", deny.NewCmd},
	{"grants", "delete", "Delete a grant or a leftover: a resource slice, a resource slice class, a nonce, an export", deletecmd.NewCmd},
	{"grants", "grant", "Give a consumer more on this cluster: a namespace", grant.NewCmd},
	{"grants", "request", "Ask a provider for more: a namespace, an exchange credential", request.NewCmd},
	{"exchange", "exchange", "Map this cluster's users to identities on providers: apply, get, resolve", exchange.NewCmd},
	{"exchange", "allow", "Consent to a consumer's request: an identity exchange", allow.NewCmd},
	{"lifecycle", "cordon", "Stop a consumer from starting new workloads here: a tenant", cordon.NewCmd},
	{"lifecycle", "uncordon", "Let a cordoned consumer start workloads again: a tenant", uncordon.NewCmd},
	{"lifecycle", "drain", "Cordon a consumer and delete what it runs here: a tenant", drain.NewCmd},
	{"lifecycle", "verify", "Prove, now, that every tenant's sandbox holds and what each identity can reach (provider side)", verify.NewCmd},
	{"cluster", "init", "Prepare this cluster for kubectl federate", initialize.NewCmd},
	{"cluster", "info", "Show this cluster's federation identity, tenants and identities", info.NewCmd},
	{"cluster", "status", "List every pairing of this cluster and every credential under it, with its expiry", status.NewCmd},
}

// addCommands registers the handshake commands, in groups as the help shows them. A command for which
// built says false is registered as its name and description alone: building the whole tree is most of
// what `--help` would spend after start-up, and a run needs only the command it runs.
func addCommands(root *cobra.Command, f *cmdutil.Factory, streams genericiooptions.IOStreams, built func(name string) bool) {
	root.AddGroup(
		&cobra.Group{ID: "oneshot", Title: "Both clusters at once (one machine holds both kubeconfigs):"},
		&cobra.Group{ID: "manual", Title: "One cluster at a time (each administrator holds their own):"},
		&cobra.Group{ID: "grants", Title: "Grants beyond the pairing (resource slices, extra namespaces):"},
		&cobra.Group{ID: "exchange", Title: "Identity exchange (which of this cluster's users act as whom on a provider):"},
		&cobra.Group{ID: "lifecycle", Title: "The life of a pairing (provider side):"},
		&cobra.Group{ID: "cluster", Title: "This cluster:"},
	)
	for _, e := range commands {
		var c *cobra.Command
		if built(e.name) {
			c = e.build(f, streams)
		} else {
			c = listed(e)
		}
		c.GroupID = e.group
		root.AddCommand(c)
	}
}

// listed stands for a command that is not built. Cobra cannot select it: a command is built whenever its
// name is among the arguments (NewRootCmdFor). Should it ever run, it says so rather than act.
func listed(e command) *cobra.Command {
	return &cobra.Command{
		Use:                e.name,
		Short:              e.short,
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return fmt.Errorf("internal error: command %q was listed but not built", e.name)
		},
	}
}
