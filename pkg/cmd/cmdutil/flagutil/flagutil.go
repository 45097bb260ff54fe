// Package flagutil is the part of cmdutil that needs no cluster client: the usage error (a flag or
// argument mistake) and completion from a fixed list. cmdutil re-exports both; pkg/cmd/printers imports
// this package rather than cmdutil, so that the -o plumbing links none of the clients cmdutil builds (and
// none of client-go's scheme, whose registration of every API group every run pays when it is linked).
package flagutil

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// UsageError marks a flag or argument mistake, for which main adds a pointer to the help.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// UsageErrorf returns a UsageError.
func UsageErrorf(format string, a ...any) error {
	return &UsageError{Err: fmt.Errorf(format, a...)}
}

// Usage marks err as a usage error (nil stays nil).
func Usage(err error) error {
	if err == nil {
		return nil
	}
	var u *UsageError
	if errors.As(err, &u) {
		return err
	}
	return &UsageError{Err: err}
}

// CompleteValues completes a flag from a fixed list.
func CompleteValues(values []string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}
