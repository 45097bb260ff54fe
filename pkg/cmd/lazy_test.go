package cmd

import (
	"bytes"
	"context"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// The root built for one command line answers exactly as the whole tree does: its help, its usage errors,
// its suggestions and the completion of command names read only what it lists of the commands not built.
func TestLazyRootIsTheFullRoot(t *testing.T) {
	lines := [][]string{
		{}, {"--help"}, {"-h"}, {"help"}, {"gte"}, {"nosuchcommand", "--help"}, {"--no-such-flag"},
		{"__complete", ""}, {"__complete", "g"}, {"__completeNoDesc", "re"}, {"version"},
	}
	for _, c := range commands {
		lines = append(lines, []string{c.name, "--help"}, []string{"help", c.name}, []string{"__complete", c.name, ""})
	}
	run := func(lazy bool, args []string) (string, string, int) {
		var out, errOut bytes.Buffer
		streams := genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}
		root := NewRootCmd(streams)
		if lazy {
			root = NewRootCmdFor(streams, args)
		}
		code := Execute(context.Background(), root, streams, append([]string{}, args...))
		return out.String(), errOut.String(), code
	}
	for _, args := range lines {
		wantOut, wantErr, wantCode := run(false, args)
		gotOut, gotErr, gotCode := run(true, args)
		if gotOut != wantOut || gotErr != wantErr || gotCode != wantCode {
			t.Errorf("%q: the root built for the line differs from the whole tree\nexit %d, want %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s",
				args, gotCode, wantCode, gotOut, wantOut, gotErr, wantErr)
		}
	}
}

// Every command's entry in the table says what the command itself says, and the table lists every command.
func TestCommandTableMatchesTheCommands(t *testing.T) {
	streams := genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
	full := NewRootCmd(streams)
	listedOnly := NewRootCmdFor(streams, nil)
	for _, e := range commands {
		c, _, err := full.Find([]string{e.name})
		if err != nil || c.Name() != e.name {
			t.Errorf("command %q: not in the tree (%v)", e.name, err)
			continue
		}
		if c.Short != e.short || c.GroupID != e.group || len(c.Aliases) > 0 || c.Hidden || len(c.SuggestFor) > 0 || c.Deprecated != "" {
			t.Errorf("command %q: the table says %q in group %q; the command says %q, aliases %q, hidden %v, suggested for %q, deprecated %q",
				e.name, e.short, e.group, c.Short, c.Aliases, c.Hidden, c.SuggestFor, c.Deprecated)
		}
	}
	if n, m := len(full.Commands()), len(listedOnly.Commands()); n != m || n != len(commands)+1 {
		t.Errorf("the whole tree has %d commands, the root of listed commands %d, the table %d and version", n, m, len(commands))
	}
	for _, c := range listedOnly.Commands() {
		if c.Name() == "version" {
			continue
		}
		if err := c.RunE(c, nil); err == nil {
			t.Errorf("the listed command %q ran without saying it was not built", c.Name())
		}
	}
}
