package flags

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/lifecycle"
	"github.com/federate-dev/kubectl-federate/pkg/member"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
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
	ClusterIDVar(cmd.Flags(), target, "remote-cluster-id", meaning)
	_ = cmd.RegisterFlagCompletionFunc("remote-cluster-id", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		cluster, _, err := Cluster(f, member.Discard)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		info, err := lifecycle.Pairings(cmd.Context(), cluster)
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

// ClusterIDVar registers a cluster ID flag (--cluster-id, --remote-cluster-id), checked when parsed.
func ClusterIDVar(fs *pflag.FlagSet, target *string, name, usage string) {
	fs.Var(&clusterIDValue{target: target, flag: "--" + name}, name, usage)
}

// clusterIDValue is a cluster ID flag, checked when parsed, so that no command validates it again: a
// value that is not a cluster ID is a usage error naming the flag, whatever the command.
type clusterIDValue struct {
	target *string
	flag   string
}

func (v *clusterIDValue) Set(s string) error {
	if err := member.ValidateClusterID(v.flag, s); err != nil {
		return &cmdutil.FlagValueError{Err: err}
	}
	*v.target = s
	return nil
}

func (v *clusterIDValue) String() string { return *v.target }
func (v *clusterIDValue) Type() string   { return "string" }

// RequireRemoteClusterID is the check of a --remote-cluster-id that a command needs unless another flag
// names the cluster (one shot with --remote-kubeconfig, renew --all): given, the flag was checked when
// parsed.
func RequireRemoteClusterID(id string) error {
	if id == "" {
		return errors.New("--remote-cluster-id: must not be empty")
	}
	return nil
}

// RemoteIDError names --remote-cluster-id in a domain error about the remote cluster's ID.
func RemoteIDError(err error) error {
	if errors.Is(err, member.ErrOwnID) {
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

// readers name, for each kind of file the commands exchange, what reads it.
var readers = map[string]string{
	"Tenant":        "the provider's kubectl federate generate identity -f",
	"Identity":      "the consumer's kubectl federate import identity -f",
	"ResourceSlice": "kubectl federate accept resourceslice -f (a request, on the provider) or import resourceslice -f (a grant, on the consumer)",
}

// FileKindHint adds to a file of the wrong kind the command that reads the kind it is.
func FileKindHint(err error) error {
	var wk *handshake.WrongKindError
	if errors.As(err, &wk) {
		if cmd, ok := readers[wk.Have]; ok {
			return fmt.Errorf("-f %w: that file is read by %s", err, cmd)
		}
		return fmt.Errorf("-f %w", err)
	}
	return err
}

// FileKind is the kind of the Kubernetes-style object data holds (YAML or JSON), or "" when it holds
// none: how a command that reads a one-line value names the file of another step it was given.
func FileKind(data []byte) string {
	if !bytes.Contains(data, []byte("kind")) {
		return ""
	}
	var meta struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return ""
	}
	return meta.Kind
}

// WrongFileError says a file holds a kind where want was expected, and which command reads that kind.
func WrongFileError(kind, want string) error {
	if cmd, ok := readers[kind]; ok {
		return fmt.Errorf("is %s file, not %s: that file is read by %s", article(kind), want, cmd)
	}
	return fmt.Errorf("is %s file, not %s", article(kind), want)
}

// NonceHint adds to an expired, used or missing nonce the command that makes a new one.
func NonceHint(err error, consumerID string) error {
	switch {
	case errors.Is(err, nonce.ErrExpired), errors.Is(err, nonce.ErrUsed), errors.Is(err, nonce.ErrNotFound):
		return fmt.Errorf("%w; the provider's administrator makes a new one with: kubectl federate create nonce --remote-cluster-id %s (then get nonce, and the consumer runs generate tenant again)", err, consumerID)
	}
	return err
}

// article puts "a" or "an" before a kind.
func article(kind string) string {
	if kind != "" && strings.ContainsRune("AEIOU", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}
