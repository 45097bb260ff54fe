// Package output renders every byte a human reads: progress steps, warnings and errors, on stderr.
// It is the only package that uses pterm. When stderr is a terminal (and colour is allowed) steps are
// spinners with coloured prefixes; otherwise each step is one plain line with no escape codes.
package output

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/pterm/pterm"
	"k8s.io/cli-runtime/pkg/printers"
)

// ColorMode is the value of the --color flag; it implements pflag.Value.
type ColorMode string

// The --color values.
const (
	ColorAuto   ColorMode = "auto"
	ColorAlways ColorMode = "always"
	ColorNever  ColorMode = "never"
)

// ColorModes lists the accepted --color values, for help and completion.
var ColorModes = []string{string(ColorAuto), string(ColorAlways), string(ColorNever)}

func (m *ColorMode) String() string { return string(*m) }

// Set validates and stores a --color value.
func (m *ColorMode) Set(v string) error {
	switch ColorMode(v) {
	case ColorAuto, ColorAlways, ColorNever:
		*m = ColorMode(v)
		return nil
	}
	return fmt.Errorf("must be one of %s", strings.Join(ColorModes, "|"))
}

// Type names the flag's value in help.
func (m *ColorMode) Type() string { return "string" }

// Styled decides whether stderr gets spinners and colour: always/never win; auto means stderr is a
// terminal, TERM is not "dumb" and NO_COLOR is unset.
func Styled(mode ColorMode, stderrIsTerminal bool, getenv func(string) string) bool {
	switch mode {
	case ColorAlways:
		return true
	case ColorNever:
		return false
	}
	return stderrIsTerminal && getenv("TERM") != "dumb" && getenv("NO_COLOR") == ""
}

// Printer writes progress for one scope ("local", "remote" or none) to stderr.
type Printer struct {
	w      io.Writer
	styled bool
	scope  string
	mu     *sync.Mutex
	live   *live // styled: the running steps, shared with every scoped copy
	dryRun bool  // every line says it is a dry run, and no step claims it was done
}

// NewPrinter returns a printer on w, styled or plain as decided by mode and w.
func NewPrinter(w io.Writer, mode ColorMode) *Printer {
	if mode == ColorAlways {
		pterm.EnableColor() // pterm itself turns colour off under NO_COLOR; --color always wins
	}
	p := &Printer{w: w, styled: Styled(mode, printers.IsTerminal(w), os.Getenv), mu: &sync.Mutex{}}
	// Live lines move the cursor, which needs a terminal's file; elsewhere a styled printer writes
	// outcomes only.
	_, file := w.(interface{ Fd() uintptr })
	p.live = &live{w: w, drawn: p.styled && file}
	return p
}

// Scoped returns a printer whose lines are prefixed with (scope).
func (p *Printer) Scoped(scope string) *Printer {
	c := *p
	c.scope = scope
	return &c
}

// DryRun returns a printer for a dry run: every line starts with "(dry run)", and a step that succeeds says
// it would be done rather than the outcome it would have had, since nothing was changed.
func (p *Printer) DryRun() *Printer {
	c := *p
	c.dryRun = true
	return &c
}

// Styled reports whether this printer uses colour and spinners.
func (p *Printer) Styled() bool { return p.styled }

// text is what a line says: escaped (a message can quote a string that came from a request or the other
// cluster, and one line on stderr must stay one line that says only what it holds), then marked.
func (p *Printer) text(msg string) string {
	msg = Escape(msg)
	if p.dryRun {
		msg = "(dry run) " + msg
	}
	if p.scope == "" {
		return msg
	}
	return "(" + p.scope + ") " + msg
}

func (p *Printer) prefix(kind string) *pterm.PrefixPrinter {
	var base pterm.PrefixPrinter
	switch kind {
	case "INFO":
		base = pterm.Info
	case "WARNING":
		base = pterm.Warning
	case "ERROR":
		base = pterm.Error
	default:
		base = pterm.Success
	}
	return base.WithWriter(p.w)
}

func (p *Printer) line(kind, msg string) {
	if p.styled {
		p.live.print(func() { p.prefix(kind).Println(p.text(msg)) })
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%-7s %s\n", kind, p.text(msg))
}

// Info prints an informational line.
func (p *Printer) Info(msg string) { p.line("INFO", msg) }

// Warn prints a warning line.
func (p *Printer) Warn(msg string) { p.line("WARNING", msg) }

// Error prints an error line (the final error of a command is printed by main, not here).
func (p *Printer) Error(msg string) { p.line("ERROR", msg) }

// Begin starts a step: a spinner showing running on a terminal, nothing in plain mode. The returned
// function ends it, printing done (or the error) as one line.
func (p *Printer) Begin(running, done string) func(error) {
	start := time.Now()
	if p.dryRun {
		done = running + ": would be done"
	}
	// An error that only changes the way the run goes on ends the step as a warning; a done line decided
	// at the end (member.DoneText) is success.
	var fallback interface{ StepWarning() string }
	var said interface{ StepDone() string }
	plain := func(err error) {
		if errors.As(err, &said) {
			err = nil
			if !p.dryRun {
				done = said.StepDone()
			}
		}
		if errors.As(err, &fallback) {
			p.line("WARNING", fallback.StepWarning())
			return
		}
		if err != nil {
			// The error reaches the user once, as the command's one "error:" line: a step that failed
			// prints nothing of its own.
			return
		}
		p.line("INFO", done)
	}
	if !p.styled {
		return plain
	}
	id := p.live.add(p.text(running))
	// The step's line leaves the live area and its outcome is written once, above it.
	end := func(kind, text string) {
		p.live.done(id, func() { p.prefix(kind).Println(p.text(text)) })
	}
	return func(err error) {
		elapsed := time.Since(start).Round(time.Millisecond)
		if errors.As(err, &said) {
			err = nil
			if !p.dryRun {
				done = said.StepDone()
			}
		}
		switch {
		case errors.As(err, &fallback):
			end("WARNING", fmt.Sprintf("%s (%s)", fallback.StepWarning(), elapsed))
		case err != nil:
			p.live.done(id, func() {}) // said once, by the command's "error:" line
		default:
			end("SUCCESS", fmt.Sprintf("%s (%s)", done, elapsed))
		}
	}
}
