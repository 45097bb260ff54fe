package doctest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const page = "# A page\n" + // 1
	"\n" + // 2
	"```sh\n" + // 3
	"echo one > one.txt\n" + // 4
	"```\n" + // 5
	"<!-- doc-test: file rules.yaml -->\n" + // 6
	"```yaml\n" + // 7
	"kind: Rules\n" + // 8
	"```\n" + // 9
	"<!-- doc-test: skip (needs a cloud) -->\n" + // 10
	"```sh\n" + // 11
	"exit 7\n" + // 12
	"```\n" + // 13
	"<!-- doc-test: expect-fail (No such file) -->\n" + // 14
	"```sh\n" + // 15
	"cat no-such-file\n" + // 16
	"```\n" + // 17
	"```sh\n" + // 18
	"cat rules.yaml one.txt\n" + // 19
	"```\n" + // 20
	"<!-- doc-test: output -->\n" + // 21
	"```text\n" + // 22
	"kind: Rules\n" + // 23
	"one\n" + // 24
	"```\n" + // 25
	"```yaml\n" + // 26
	"not: run\n" + // 27
	"```\n" + // 28
	"```sh\n" + // 29
	"echo fine\n" + // 30
	"ls /nonexistent-dir \\\n" + // 31
	"  -l\n" + // 32
	"echo never\n" + // 33
	"```\n" // 34

func TestParse(t *testing.T) {
	blocks, err := Parse(page)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range blocks {
		s := b.Lang
		switch {
		case b.Skip != "":
			s += " skip=" + b.Skip
		case b.ExpectFail:
			s += " expect-fail=" + b.ExpectMessage
		case b.File != "":
			s += " file=" + b.File
		case b.Output != nil:
			s += " output@" + string(rune('0'+b.Output.Line/10)) + string(rune('0'+b.Output.Line%10))
		}
		got = append(got, s)
	}
	want := []string{"sh", "yaml file=rules.yaml", "sh skip=needs a cloud", "sh expect-fail=No such file", "sh output@22", "yaml", "sh"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("blocks:\n%q\nwant\n%q", got, want)
	}

	segs := Segments(append(blocks, &Block{Lang: "sh", Fresh: true}, &Block{Lang: "sh"}))
	if len(segs) != 2 || len(segs[0]) != len(blocks) || len(segs[1]) != 2 || !segs[1][0].Fresh {
		t.Errorf("Segments: %d segments", len(segs))
	}

	for _, tc := range []struct{ page, want string }{
		{"<!-- doc-test: skip -->\n```sh\nx\n```\n", "skip needs a reason"},
		{"<!-- doc-test: skip (why) -->\n\n```sh\nx\n```\n", "must be on the line right before its fence"},
		{"<!-- doc-test: skip (why) -->\ntext\n", "is not followed by a fence"},
		{"<!-- doc-test: sikp (why) -->\n```sh\nx\n```\n", `unknown doc-test marker "sikp"`},
		{"<!-- doc-test skip -->\n```sh\nx\n```\n", "is not a doc-test marker"},
		{"<!-- doc-test: output -->\n```text\nx\n```\n", "an output block must follow a shell block"},
		{"<!-- doc-test: file a/b -->\n```yaml\nx\n```\n", "file needs a plain file name"},
		{"```sh\nx\n", "never closed"},
	} {
		if _, err := Parse(tc.page); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q): %v, want %q", tc.page, err, tc.want)
		}
	}
}

// runPage runs a page's script with bash in a fresh directory, as test/docs does.
func runPage(t *testing.T, page string) (*Result, []*Block) {
	t.Helper()
	blocks, err := Parse(page)
	if err != nil {
		t.Fatal(err)
	}
	dir, work := t.TempDir(), t.TempDir()
	trace := filepath.Join(dir, "trace")
	s := NewScript(blocks, trace, dir)
	cmd := exec.Command("bash", "-c", s.Text)
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	exited := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		exited = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(trace)
	t.Logf("output:\n%s", out)
	return s.Read(blocks, string(data), exited), blocks
}

// A page runs in order: files saved, skipped blocks left out, an expected failure accepted, output kept,
// and the page stops at the first unexpected failure, naming its line and the whole command.
func TestScript(t *testing.T) {
	r, blocks := runPage(t, page)
	if len(r.Ran) != 3 || r.Ran[0] != blocks[0] || r.Ran[1] != blocks[3] || r.Ran[2] != blocks[4] {
		t.Errorf("ran %d blocks: %+v", len(r.Ran), r.Ran)
	}
	if r.Failed != blocks[6] || r.Line != 31 || r.Command != "ls /nonexistent-dir \\\n  -l" || r.Status != 2 {
		t.Errorf("failure: block %+v, line %d, command %q, status %d (%s)", r.Failed, r.Line, r.Command, r.Status, r.Reason)
	}
	out, err := os.ReadFile(r.Outputs[blocks[4]])
	if err != nil || string(out) != "kind: Rules\none\n" {
		t.Errorf("the kept output: %q %v", out, err)
	}

	// An expect-fail block that succeeds, or fails without its message, stops the page.
	r, blocks = runPage(t, "<!-- doc-test: expect-fail -->\n```sh\ntrue\n```\n```sh\necho after\n```\n")
	if r.Failed != blocks[0] || !strings.Contains(r.Reason, "exited 0") || len(r.Ran) != 0 {
		t.Errorf("an expected failure that succeeded: %+v", r)
	}
	r, blocks = runPage(t, "<!-- doc-test: expect-fail (wanted text) -->\n```sh\necho other >&2; false\n```\n")
	if r.Failed != blocks[0] || !strings.Contains(r.Reason, `without printing "wanted text"`) {
		t.Errorf("an expected failure without its message: %+v", r)
	}
	// A failure inside a pipeline or a command substitution names the line it starts on.
	r, blocks = runPage(t, "```sh\necho ok\nx=$(false)\necho never\n```\n")
	if r.Failed != blocks[0] || r.Line != 3 || r.Command != "x=$(false)" {
		t.Errorf("a failing substitution: %+v", r)
	}
	r, _ = runPage(t, "```sh\necho a |\n  grep b\n```\n")
	if r.Line != 2 || r.Command != "echo a |\n  grep b" || r.Status != 1 {
		t.Errorf("a failing pipeline: %+v", r)
	}
}

func TestNormalizeAndReplace(t *testing.T) {
	a := "NAME                 TARGET\nmapping-3f1c0e9b7a5d4c2e   user-1   2026-11-23T12:00:00Z   89d\n"
	b := "NAME    TARGET\nmapping-0123456789abcdef user-1 2027-01-02T03:04:05Z 30d\n\n"
	if Normalize(a) != Normalize(b) {
		t.Errorf("Normalize:\n%s\n%s", Normalize(a), Normalize(b))
	}
	if Normalize("user-1") == Normalize("user-2 x") {
		t.Error("Normalize hides words")
	}
	got := ReplaceOutputs(page, map[int]string{22: "new\noutput"})
	want := strings.Replace(page, "kind: Rules\none\n```\n```yaml", "new\noutput\n```\n```yaml", 1)
	if got != want {
		t.Errorf("ReplaceOutputs:\n%s", got)
	}
}
