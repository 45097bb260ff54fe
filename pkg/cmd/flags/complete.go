package flags

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/lifecycle"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// Completions of the names a cluster knows, for a command's NAME argument or a flag: what the cluster
// holds for the --remote-cluster-id given so far. A failure completes nothing (a shell has no place for an
// error).

// namesOf lists names through the command's cluster, for the --remote-cluster-id already on the line.
type namesOf func(ctx context.Context, c *member.Cluster, remoteID string) ([]string, error)

func complete(f *cmdutil.Factory, list namesOf) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, _, err := Cluster(f, member.Discard)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		remote, _ := cmd.Flags().GetString("remote-cluster-id")
		names, err := list(cmd.Context(), c, remote)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// CompleteConsumers completes the consumers this (provider) cluster holds a Tenant for, with the tenant
// namespace as the shell's description: the CONSUMER of cordon, uncordon and drain. Nothing once
// --remote-cluster-id names the consumer, which may not be named twice.
func CompleteConsumers(f *cmdutil.Factory) cobra.CompletionFunc {
	return complete(f, func(ctx context.Context, c *member.Cluster, remote string) ([]string, error) {
		if remote != "" {
			return nil, nil
		}
		info, err := lifecycle.Pairings(ctx, c)
		if err != nil {
			return nil, err
		}
		var ids []string
		for _, t := range info.Tenants {
			ids = append(ids, t.ConsumerID+"\tconsumer (tenant "+t.Namespace+")")
		}
		return ids, nil
	})
}

// CompleteSlices completes the resource slices this cluster shares with the remote cluster (either side).
func CompleteSlices(f *cmdutil.Factory) cobra.CompletionFunc {
	return complete(f, func(ctx context.Context, c *member.Cluster, remote string) ([]string, error) {
		return grants.SliceNames(ctx, c, remote)
	})
}

// CompleteExtraNamespaces completes the extra namespaces granted to, or asked by, the consumer.
func CompleteExtraNamespaces(f *cmdutil.Factory) cobra.CompletionFunc {
	return complete(f, func(ctx context.Context, c *member.Cluster, remote string) ([]string, error) {
		list, err := grants.ExtraNamespaces(ctx, c, remote, false)
		var out []string
		for _, n := range list {
			out = append(out, n.Namespace)
		}
		return out, err
	})
}

// CompleteExchangeRequests completes the consumer's exchange requests.
func CompleteExchangeRequests(f *cmdutil.Factory) cobra.CompletionFunc {
	return complete(f, func(ctx context.Context, c *member.Cluster, remote string) ([]string, error) {
		list, err := exchange.RequestNames(ctx, c, remote)
		return list, err
	})
}

// CompleteClasses completes the provider's resource slice classes.
func CompleteClasses(f *cmdutil.Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		c, _, err := Cluster(f, member.Discard)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		classes, err := grants.SliceClassNames(cmd.Context(), c)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return classes, cobra.ShellCompDirectiveNoFileComp
	}
}
