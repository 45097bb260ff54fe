package cmdutil

import (
	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil/flagutil"
)

// CompleteValues completes a flag from a fixed list.
func CompleteValues(values []string) cobra.CompletionFunc { return flagutil.CompleteValues(values) }
