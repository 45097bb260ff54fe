package cmd

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/util"
)

// addCommands registers the handshake commands.
func addCommands(root *cobra.Command, f *util.Factory, streams genericiooptions.IOStreams) {
	_, _, _ = root, f, streams
}
