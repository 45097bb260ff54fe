package output

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/federate-dev/kubectl-federate/pkg/member"
)

func TestStyled(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		mode ColorMode
		tty  bool
		env  map[string]string
		want bool
	}{
		{ColorAuto, true, nil, true},
		{ColorAuto, false, nil, false},
		{ColorAuto, true, map[string]string{"NO_COLOR": "1"}, false},
		{ColorAuto, true, map[string]string{"TERM": "dumb"}, false},
		{ColorAlways, false, map[string]string{"NO_COLOR": "1"}, true},
		{ColorNever, true, nil, false},
	}
	for _, c := range cases {
		if got := Styled(c.mode, c.tty, env(c.env)); got != c.want {
			t.Errorf("Styled(%s, tty=%v, %v) = %v", c.mode, c.tty, c.env, got)
		}
	}
	var m ColorMode
	if err := m.Set("sometimes"); err == nil {
		t.Error("--color sometimes accepted")
	}
}

func TestPlainPrinter(t *testing.T) {
	var buf bytes.Buffer
	p := NewPrinter(&buf, ColorNever).Scoped("remote")
	p.Begin("Doing", "Done")(nil)
	p.Begin("Failing", "never")(errors.New("boom"))
	p.Warn("careful")
	got := buf.String()
	// A failed step prints nothing: its error is the command's one "error:" line.
	want := "INFO    (remote) Done\nWARNING (remote) careful\n"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	var styled bytes.Buffer
	NewPrinter(&styled, ColorAlways).Begin("Failing", "never")(errors.New("boom"))
	if strings.Contains(styled.String(), "boom") || strings.Contains(styled.String(), "never") {
		t.Fatalf("a failed styled step printed %q", styled.String())
	}
	if strings.Contains(got, "\x1b") {
		t.Fatal("escape codes in plain output")
	}
}

// A step that learns what it did as it goes ends with that line, plain and styled.
func TestStepSaying(t *testing.T) {
	for _, mode := range []ColorMode{ColorNever, ColorAlways} {
		var buf bytes.Buffer
		p := NewPrinter(&buf, mode)
		if err := member.StepSaying(p, "Removing", func() (string, error) { return "Removed the binding only", nil }); err != nil {
			t.Fatal(err)
		}
		if err := member.StepSaying(p, "Failing", func() (string, error) { return "never", errors.New("boom") }); err == nil {
			t.Fatal("StepSaying lost the error")
		}
		out := buf.String()
		if !strings.Contains(out, "Removed the binding only") || strings.Contains(out, "boom") || strings.Contains(out, "never") {
			t.Errorf("color %v: %q", mode, out)
		}
	}
}

// The styled printer (spinners, colour) runs without a terminal when forced, and writes only to its writer.
func TestStyledPrinter(t *testing.T) {
	var buf bytes.Buffer
	p := NewPrinter(&buf, ColorAlways).Scoped("local")
	if !p.Styled() {
		t.Fatal("--color always did not style")
	}
	p.Begin("Doing", "Done")(nil)
	p.Begin("Failing", "never")(errors.New("boom"))
	p.Info("fact")
	out := buf.String()
	for _, want := range []string{"(local) Done", "(local) fact", "\x1b["} {
		if !strings.Contains(out, want) {
			t.Errorf("styled output lacks %q: %q", want, out)
		}
	}
	if strings.Contains(out, "never") || strings.Contains(out, "boom") {
		t.Errorf("a failed step printed its success text or its error (the command's error line says it): %q", out)
	}
}

// Steps of both clusters running at once, as a one-shot command runs them, each write their outcome once
// (authenticate once drew a SUCCESS line twice: two spinners raced for one terminal line).
func TestConcurrentStepsWriteEachOutcomeOnce(t *testing.T) {
	var buf bytes.Buffer
	p := NewPrinter(&buf, ColorAlways)
	sides := []*Printer{p.Scoped("local"), p.Scoped("remote")}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			end := sides[i%2].Begin(fmt.Sprintf("Doing %02d", i), fmt.Sprintf("Done %02d", i))
			time.Sleep(time.Millisecond)
			end(nil)
		}()
	}
	wg.Wait()
	out := buf.String()
	for i := range 20 {
		if n := strings.Count(out, fmt.Sprintf("Done %02d", i)); n != 1 {
			t.Errorf("outcome %02d written %d times:\n%q", i, n, out)
		}
	}
}
