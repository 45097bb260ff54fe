package flags

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/kubeconfig"
	"github.com/federate-dev/kubectl-federate/pkg/lifecycle"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// MeshFlags name the clusters of a mesh (several kubeconfig files, or several contexts of the root's
// kubeconfig), how many pairs run at once, and the --timeout of the whole run.
type MeshFlags struct {
	Kubeconfigs []string
	Contexts    []string
	Parallel    int
	Timeout     time.Duration
}

// AddFlags registers the mesh flags on cmd.
func (m *MeshFlags) AddFlags(cmd *cobra.Command) {
	m.Parallel, m.Timeout = 4, 10*time.Minute
	cmd.Flags().StringSliceVar(&m.Kubeconfigs, "kubeconfigs", nil, "The clusters, one kubeconfig file each (comma-separated or repeated)")
	cmd.Flags().StringSliceVar(&m.Contexts, "contexts", nil, "The clusters, as contexts of --kubeconfig (comma-separated or repeated)")
	cmd.Flags().IntVar(&m.Parallel, "parallel", m.Parallel, "How many directed pairs run at once")
	cmdutil.TimeoutFlag(cmd.Flags(), &m.Timeout, m.Timeout, "the whole run")
	_ = cmd.MarkFlagFilename("kubeconfigs")
}

// Validate checks the flags without I/O.
func (m *MeshFlags) Validate() error {
	switch {
	case len(m.Kubeconfigs) > 0 && len(m.Contexts) > 0:
		return errors.New("--kubeconfigs and --contexts: name the clusters one way only")
	case len(m.Kubeconfigs)+len(m.Contexts) < 2:
		return errors.New("--kubeconfigs or --contexts: name at least two clusters")
	case m.Parallel < 1 || m.Parallel > 64:
		return fmt.Errorf("--parallel %d: must be between 1 and 64", m.Parallel)
	}
	seen := map[string]bool{}
	for _, n := range append(append([]string{}, m.Kubeconfigs...), m.Contexts...) {
		if n == "" || seen[n] {
			return fmt.Errorf("--kubeconfigs/--contexts %q: empty or named twice", n)
		}
		seen[n] = true
	}
	return nil
}

// Members builds one mesh member per named cluster, each with its own counted connection.
func (m *MeshFlags) Members(root *cmdutil.Factory, streams cmdutil.Streams) ([]*lifecycle.MeshMember, error) {
	var out []*lifecycle.MeshMember
	add := func(name string, f *cmdutil.Factory) error {
		c, err := f.Clients()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		server, ca, err := kubeconfig.ServerOf(c.Config)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, &lifecycle.MeshMember{Name: name, APIServer: server, CA: ca, New: func(r member.Reporter) *member.Cluster {
			return NewCluster(f, c, r, f.ServerNow)
		}})
		return nil
	}
	for _, path := range m.Kubeconfigs {
		f := root.NewSibling(streams)
		p := path
		f.Flags.KubeConfig = &p
		if err := add(path, f); err != nil {
			return nil, err
		}
	}
	for _, ctxName := range m.Contexts {
		f := root.NewSibling(streams)
		f.Flags.KubeConfig = root.Flags.KubeConfig
		n := ctxName
		f.Flags.Context = &n
		if err := add(ctxName, f); err != nil {
			return nil, err
		}
	}
	return out, nil
}
