package cmdutil

import "github.com/spf13/cobra"

// NewGroup returns a verb command (create, get, generate, import) that only holds subcommands; run alone
// it fails with a pointer to its help.
func NewGroup(use, short, long string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return UsageErrorf("%s needs a resource; one of: %s", cmd.CommandPath(), subcommands(cmd))
		},
	}
}

func subcommands(cmd *cobra.Command) string {
	s := ""
	for _, c := range cmd.Commands() {
		if !c.Hidden {
			if s != "" {
				s += ", "
			}
			s += c.Name()
		}
	}
	return s
}
