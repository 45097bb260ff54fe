package cmd

import (
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

// addCommands registers the handshake commands, in groups as the help shows them.
func addCommands(root *cobra.Command, f *cmdutil.Factory, streams genericiooptions.IOStreams) {
	root.AddGroup(
		&cobra.Group{ID: "oneshot", Title: "Both clusters at once (one machine holds both kubeconfigs):"},
		&cobra.Group{ID: "manual", Title: "One cluster at a time (each administrator holds their own):"},
		&cobra.Group{ID: "grants", Title: "Grants beyond the pairing (resource slices, extra namespaces):"},
		&cobra.Group{ID: "exchange", Title: "Identity exchange (which of this cluster's users act as whom on a provider):"},
		&cobra.Group{ID: "lifecycle", Title: "The life of a pairing (provider side):"},
		&cobra.Group{ID: "cluster", Title: "This cluster:"},
	)
	for _, c := range []*cobra.Command{authenticate.NewCmd(f, streams), unauthenticate.NewCmd(f, streams), renew.NewCmd(f, streams),
		mesh.NewCmd(f, streams), unmesh.NewCmd(f, streams)} {
		c.GroupID = "oneshot"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{create.NewCmd(f, streams), get.NewCmd(f, streams), generate.NewCmd(f, streams), importcmd.NewCmd(f, streams),
		export.NewCmd(f, streams), credential.NewCmd(f, streams), revoke.NewCmd(f, streams)} {
		c.GroupID = "manual"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{accept.NewCmd(f, streams), deny.NewCmd(f, streams), deletecmd.NewCmd(f, streams),
		grant.NewCmd(f, streams), request.NewCmd(f, streams)} {
		c.GroupID = "grants"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{exchange.NewCmd(f, streams), allow.NewCmd(f, streams)} {
		c.GroupID = "exchange"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{cordon.NewCmd(f, streams), uncordon.NewCmd(f, streams), drain.NewCmd(f, streams), verify.NewCmd(f, streams)} {
		c.GroupID = "lifecycle"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{initialize.NewCmd(f, streams), info.NewCmd(f, streams), status.NewCmd(f, streams)} {
		c.GroupID = "cluster"
		root.AddCommand(c)
	}
}
