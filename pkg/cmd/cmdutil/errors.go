package cmdutil

import (
	"context"
	"errors"
	"fmt"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil/flagutil"
)

// Exit codes of kubectl federate.
const (
	ExitError       = 1
	ExitExpiring    = 3   // status --expiring-within: a credential expires within the window
	ExitCheckFailed = 4   // status --check: a held credential does not work; verify: a sandbox does not hold
	ExitTimeout     = 124 // the --timeout deadline expired
	ExitInterrupted = 130 // SIGINT or SIGTERM
)

// CodedError is an error that carries its own exit code: a monitoring verdict, not a failure to run.
type CodedError struct {
	Code int
	Err  error
}

func (e *CodedError) Error() string { return e.Err.Error() }
func (e *CodedError) Unwrap() error { return e.Err }

// ExitCode maps an error returned by a command to the process exit code.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, context.DeadlineExceeded):
		return ExitTimeout
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	}
	var coded *CodedError
	if errors.As(err, &coded) {
		return coded.Code
	}
	return ExitError
}

// WithDeadline turns an error that happened because ctx expired into one that says so and carries
// context.DeadlineExceeded, whatever the client library wrapped it in.
func WithDeadline(ctx context.Context, err error, timeoutFlag string) error {
	if err == nil {
		return nil
	}
	switch ctx.Err() {
	case context.DeadlineExceeded:
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("timed out (%s): %w", timeoutFlag, err)
		}
		return fmt.Errorf("timed out (%s): %w: %w", timeoutFlag, err, context.DeadlineExceeded)
	case context.Canceled:
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("interrupted: %w", err)
		}
		return fmt.Errorf("interrupted: %w: %w", err, context.Canceled)
	}
	return err
}

// FlagValueError is a flag value's own check failing when parsed, with a message that names the flag
// already: it is said as it is, not wrapped in pflag's `invalid argument "X" for "--flag" flag: ...`.
type FlagValueError struct{ Err error }

func (e *FlagValueError) Error() string { return e.Err.Error() }
func (e *FlagValueError) Unwrap() error { return e.Err }

// UsageError marks a flag or argument mistake, for which main adds a pointer to the help (flagutil holds
// it, for the packages that must not link this one's clients).
type UsageError = flagutil.UsageError

// UsageErrorf returns a UsageError.
func UsageErrorf(format string, a ...any) error { return flagutil.UsageErrorf(format, a...) }

// Usage marks err as a usage error (nil stays nil).
func Usage(err error) error { return flagutil.Usage(err) }
