package cmdutil

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// Enum is a flag value restricted to a fixed list, checked when the flag is parsed, so that the same
// mistake gets the same message from every command.
type Enum struct {
	value   string
	allowed []string
}

// NewEnum returns an Enum holding value ("" for none) and accepting allowed.
func NewEnum(value string, allowed ...string) *Enum { return &Enum{value: value, allowed: allowed} }

func (e *Enum) String() string { return e.value }

// Set accepts one of the allowed values.
func (e *Enum) Set(v string) error {
	if !slices.Contains(e.allowed, v) {
		return fmt.Errorf("must be one of %s", strings.Join(e.allowed, ", "))
	}
	e.value = v
	return nil
}

// Type names the value in help.
func (e *Enum) Type() string { return "string" }

// Allowed lists the accepted values.
func (e *Enum) Allowed() []string { return e.allowed }

// AddEnumFlag registers e as the flag name (with shorthand short, or ""), lists its values in the usage
// and completes them.
func AddEnumFlag(cmd *cobra.Command, e *Enum, name, short, usage string) {
	cmd.Flags().VarP(e, name, short, fmt.Sprintf("%s. One of: (%s)", usage, strings.Join(e.allowed, ", ")))
	_ = cmd.RegisterFlagCompletionFunc(name, CompleteValues(e.allowed))
}
