package flags

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
)

// RemoteClusterID registers the --remote-cluster-id flag every single-cluster pairing command shares,
// completed from the tenants and identities of the current cluster.
func RemoteClusterID(f *cmdutil.Factory, cmd *cobra.Command, target *string, meaning string) {
	OptionalRemoteClusterID(f, cmd, target, meaning)
	_ = cmd.MarkFlagRequired("remote-cluster-id")
}

// OptionalRemoteClusterID is RemoteClusterID for commands that can also learn the ID another way (from
// the remote cluster in one shot, or by listing every pairing).
func OptionalRemoteClusterID(f *cmdutil.Factory, cmd *cobra.Command, target *string, meaning string) {
	cmd.Flags().StringVar(target, "remote-cluster-id", "", meaning)
	_ = cmd.RegisterFlagCompletionFunc("remote-cluster-id", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		cluster, _, err := Cluster(f, handshake.Discard)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		info, err := cluster.Pairings(cmd.Context())
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var ids []string
		for _, t := range info.Tenants {
			ids = append(ids, t.ConsumerID+"\tconsumer (tenant "+t.Namespace+")")
		}
		for _, i := range info.Identities {
			if i.ResourceSlice == "" { // a slice's identity names a provider already listed
				ids = append(ids, i.ProviderID+"\tprovider ("+i.APIServer+")")
			}
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	})
}

// RemoteIDError names --remote-cluster-id in a domain error about the remote cluster's ID.
func RemoteIDError(err error) error {
	if errors.Is(err, handshake.ErrOwnID) {
		return fmt.Errorf("--remote-cluster-id: %w", err)
	}
	return err
}

// IgnoreNotFound registers kubectl's --ignore-not-found on a removal.
func IgnoreNotFound(cmd *cobra.Command, target *bool) {
	cmd.Flags().BoolVar(target, "ignore-not-found", false, "Treat a name this cluster has no record of as success (exit 0), as kubectl delete does")
}

// NotFoundHint names the flag that gave the name a *handshake.NotFoundError is about.
func NotFoundHint(err error, flag string) error {
	var nf *handshake.NotFoundError
	if errors.As(err, &nf) {
		return fmt.Errorf("%s: %w (--ignore-not-found to accept that)", flag, err)
	}
	return err
}
