package flags

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/federate-dev/kubectl-federate/pkg/grants"
)

// SliceResources are --cpu, --memory, --pods and --ephemeral-storage (or, with a prefix, --max-cpu ...):
// a slice's resources as written, only those given.
type SliceResources struct {
	prefix string
	values map[string]*string
	cmd    *cobra.Command
}

// AddSliceResources registers the flags; prefix ("" or "max-") and what ("asked for", "granted", ...)
// shape their names and usage.
func AddSliceResources(cmd *cobra.Command, prefix, what string) *SliceResources {
	s := &SliceResources{prefix: prefix, values: map[string]*string{}, cmd: cmd}
	usage := map[string]string{
		grants.SliceCPU:              "CPU " + what + " (a quantity: 2, 500m)",
		grants.SliceMemory:           "Memory " + what + " (a quantity: 4Gi)",
		grants.SlicePods:             "Number of pods " + what,
		grants.SliceEphemeralStorage: "Ephemeral storage " + what + " (a quantity: 10Gi)",
	}
	for _, name := range grants.SliceResources {
		v := new(string)
		s.values[name] = v
		cmd.Flags().StringVar(v, prefix+name, "", usage[name])
	}
	return s
}

// Values returns the resources whose flags were given.
func (s *SliceResources) Values() map[string]string {
	out := map[string]string{}
	for name, v := range s.values {
		if s.cmd.Flags().Changed(s.prefix + name) {
			out[name] = *v
		}
	}
	return out
}

// Flag is the flag name of a resource, with its dashes.
func (s *SliceResources) Flag(name string) string { return "--" + s.prefix + name }

// SliceGrantError names the flag behind a grant the slice cannot get.
func SliceGrantError(err error) error {
	var ge *grants.GrantError
	if errors.As(err, &ge) {
		return fmt.Errorf("--%s: %s", ge.Resource, ge.Problem)
	}
	return err
}
