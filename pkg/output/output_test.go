package output

import (
	"bytes"
	"errors"
	"strings"
	"testing"
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
	p := NewPlainPrinter(&buf).Scoped("remote")
	p.Begin("Doing", "Done")(nil)
	p.Begin("Failing", "never")(errors.New("boom"))
	p.Warn("careful")
	got := buf.String()
	want := "INFO    (remote) Done\nERROR   (remote) Failing: boom\nWARNING (remote) careful\n"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if strings.Contains(got, "\x1b") {
		t.Fatal("escape codes in plain output")
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
	for _, want := range []string{"(local) Done", "(local) Failing: boom", "(local) fact", "\x1b["} {
		if !strings.Contains(out, want) {
			t.Errorf("styled output lacks %q: %q", want, out)
		}
	}
	if strings.Contains(out, "never") {
		t.Errorf("a failed step printed its success text: %q", out)
	}
}
