package util

import (
	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// NewGroup returns a verb command (create, get, generate, import) that only holds subcommands; run alone
// it fails with a pointer to its help.
func NewGroup(use, short, long string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return UsageErrorf(cmd.CommandPath(), "%s needs a resource; one of: %s", cmd.CommandPath(), subcommands(cmd))
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

// RemoteClusterIDFlag registers the --remote-cluster-id flag every single-cluster pairing command shares,
// completed from the tenants and identities of the current cluster.
func RemoteClusterIDFlag(f *Factory, cmd *cobra.Command, target *string, meaning string) {
	cmd.Flags().StringVar(target, "remote-cluster-id", "", meaning)
	_ = cmd.MarkFlagRequired("remote-cluster-id")
	_ = cmd.RegisterFlagCompletionFunc("remote-cluster-id", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		cluster, _, err := f.Cluster(handshake.Discard)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		info, err := cluster.Info(cmd.Context())
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var ids []string
		for _, t := range info.Tenants {
			ids = append(ids, t.ConsumerID+"\tconsumer (tenant "+t.Namespace+")")
		}
		for _, i := range info.Identities {
			ids = append(ids, i.ProviderID+"\tprovider ("+i.APIServer+")")
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	})
}
