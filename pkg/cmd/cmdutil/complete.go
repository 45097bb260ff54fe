package cmdutil

import "github.com/spf13/cobra"

// CompleteValues completes a flag from a fixed list.
func CompleteValues(values []string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}
