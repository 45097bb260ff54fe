package member

import (
	"time"
)

// Reporter receives progress. pkg/output's Printer implements it; tests may use Discard.
type Reporter interface {
	// Begin starts a step described by running; the returned function ends it, with done on success. An
	// error with a StepWarning() string method ends it as a warning with that text instead: the step did
	// not do what it set out to, and the run goes on another way.
	Begin(running, done string) func(error)
	// Warn reports something the administrator should know that does not stop the command.
	Warn(msg string)
	// Info reports a fact.
	Info(msg string)
}

// Discard is a Reporter that reports nothing.
var Discard Reporter = discard{}

type discard struct{}

func (discard) Begin(string, string) func(error) { return func(error) {} }
func (discard) Warn(string)                      {}
func (discard) Info(string)                      {}

// FallbackError ends a step as a warning (see Reporter.Begin) and still carries the error, for the caller
// to choose the other way by.
type FallbackError struct {
	Err error
	Msg string
}

func (e *FallbackError) Error() string { return e.Err.Error() }
func (e *FallbackError) Unwrap() error { return e.Err }

// StepWarning is the warning the step reports instead of failing.
func (e *FallbackError) StepWarning() string { return e.Msg }

// Step runs fn as one reported step.
func Step(r Reporter, running, done string, fn func() error) error {
	end := r.Begin(running, done)
	err := fn()
	end(err)
	return err
}

// StepSaying runs fn as one reported step whose done line fn returns, for a step that learns what it did
// only as it goes (a removal that finds some of its objects already gone says which it removed).
func StepSaying(r Reporter, running string, fn func() (string, error)) error {
	end := r.Begin(running, running)
	done, err := fn()
	if err != nil {
		end(err)
		return err
	}
	end(DoneText(done))
	return nil
}

// DoneText ends a step (see Reporter.Begin) as done, with itself as the done line instead of the one given
// to Begin. It is an error only to travel through the end function; Reporters take it as success.
type DoneText string

func (d DoneText) Error() string { return string(d) }

// StepDone is the done line.
func (d DoneText) StepDone() string { return string(d) }

// CleanupTimeout bounds best-effort cleanups (a CSR object, a lease) that run after the command's own
// deadline may have passed.
// Two of them may run one after the other past a --timeout, so each gets one second: plenty for one small
// request, and the command still ends soon after its deadline.
const CleanupTimeout = time.Second
