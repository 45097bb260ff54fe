// Package doctest reads the shell examples of Markdown pages and turns each page into one bash script
// that runs them in order, so that a test (test/docs) can hold the documentation to what the product does.
// It knows nothing of clusters: the test provides the kubeconfig files the pages name.
//
// A fenced ```sh (or ```bash) block runs. An HTML comment on the line before a fence changes that:
//
//	<!-- doc-test: skip (reason) -->         the block needs what a test machine cannot have; reported
//	<!-- doc-test: expect-fail -->           the block shows an error: it must exit non-zero
//	<!-- doc-test: expect-fail (text) -->    ... and print text (stdout or stderr)
//	<!-- doc-test: file NAME -->             any block: its content is written to NAME before the next
//	                                         block runs (a file the page asks the reader to save)
//	<!-- doc-test: output -->                any block: it shows the output of the runnable block before
//	                                         it; compared after normalisation (see Normalize), rewritten
//	                                         from a real run by the regeneration step
//	<!-- doc-test: fresh -->                 a shell block that starts over on clusters kubectl federate
//	                                         never saw (the page's text says it works there): the runner
//	                                         removes everything init installed and starts a new bash, in
//	                                         the same directory (see Segments)
//
// A marker that is not followed by a fence, or that is not one of these, is an error: a stale marker
// would otherwise silently stop holding anything.
package doctest

import (
	"bufio"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Block is one fenced block of a page.
type Block struct {
	Line int    // the opening fence's line, 1-based
	Lang string // the fence's info string: sh, bash, yaml, text, ...
	Body string // the lines between the fences, each ending in a newline

	Skip          string // the reason of a skip marker
	ExpectFail    bool
	ExpectMessage string // the text an expect-fail block must print, if given
	File          string // the name a file marker writes Body to
	Fresh         bool   // starts over on clusters never initialized
	Output        *Output
}

// Output is a block showing what the runnable block before it printed.
type Output struct {
	Line int    // its opening fence's line
	Body string // as the page shows it
}

// Runs tells whether the block is run as shell.
func (b *Block) Runs() bool { return (b.Lang == "sh" || b.Lang == "bash") && b.Skip == "" }

// BodyLines is the number of lines of Body.
func (b *Block) BodyLines() int { return strings.Count(b.Body, "\n") }

var markerRE = regexp.MustCompile(`^<!--\s*doc-test:\s*(.*?)\s*-->$`)

// Parse reads a page's fenced blocks and the markers before them. Output blocks are attached to the
// runnable block before them and not listed themselves.
func Parse(page string) ([]*Block, error) {
	var blocks []*Block
	var marker string
	markerLine := 0
	var open *Block
	var output bool
	sc := bufio.NewScanner(strings.NewReader(page))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if open != nil {
			if strings.TrimSpace(line) == "```" {
				if output {
					var last *Block
					for i := len(blocks) - 1; i >= 0; i-- {
						if blocks[i].Lang == "sh" || blocks[i].Lang == "bash" {
							last = blocks[i]
							break
						}
					}
					if last == nil || last.Output != nil {
						return nil, fmt.Errorf("line %d: an output block must follow a shell block that has none yet", open.Line)
					}
					last.Output = &Output{Line: open.Line, Body: open.Body}
				} else {
					blocks = append(blocks, open)
				}
				open, output = nil, false
				continue
			}
			open.Body += line + "\n"
			continue
		}
		trimmed := strings.TrimSpace(line)
		if m := markerRE.FindStringSubmatch(trimmed); m != nil {
			if marker != "" {
				return nil, fmt.Errorf("line %d: marker %q is followed by another marker, not a fence", markerLine, marker)
			}
			marker, markerLine = m[1], n
			continue
		}
		if strings.HasPrefix(trimmed, "<!--") && strings.Contains(trimmed, "doc-test") {
			return nil, fmt.Errorf("line %d: %q is not a doc-test marker (<!-- doc-test: ... -->)", n, trimmed)
		}
		if lang, ok := strings.CutPrefix(trimmed, "```"); ok {
			open = &Block{Line: n, Lang: strings.TrimSpace(lang)}
			if marker != "" {
				if markerLine != n-1 {
					return nil, fmt.Errorf("line %d: marker %q must be on the line right before its fence", markerLine, marker)
				}
				var err error
				if output, err = apply(open, marker); err != nil {
					return nil, fmt.Errorf("line %d: %w", markerLine, err)
				}
				marker = ""
			}
			continue
		}
		if trimmed != "" && marker != "" {
			return nil, fmt.Errorf("line %d: marker %q is not followed by a fence", markerLine, marker)
		}
	}
	if open != nil {
		return nil, fmt.Errorf("line %d: the fence is never closed", open.Line)
	}
	if marker != "" {
		return nil, fmt.Errorf("line %d: marker %q is not followed by a fence", markerLine, marker)
	}
	return blocks, sc.Err()
}

// apply sets what a marker says on b; output tells that b is an output block.
func apply(b *Block, marker string) (output bool, err error) {
	verb, arg, _ := strings.Cut(marker, " ")
	arg = strings.TrimSpace(arg)
	paren := func() (string, bool) {
		if arg == "" {
			return "", true
		}
		if !strings.HasPrefix(arg, "(") || !strings.HasSuffix(arg, ")") {
			return "", false
		}
		return strings.TrimSpace(arg[1 : len(arg)-1]), true
	}
	switch verb {
	case "skip":
		reason, ok := paren()
		if !ok || reason == "" {
			return false, fmt.Errorf("skip needs a reason: <!-- doc-test: skip (why) -->")
		}
		if b.Lang != "sh" && b.Lang != "bash" {
			return false, fmt.Errorf("skip marks a shell block, not %q", b.Lang)
		}
		b.Skip = reason
	case "expect-fail":
		msg, ok := paren()
		if !ok {
			return false, fmt.Errorf("expect-fail takes an optional (text), got %q", arg)
		}
		if b.Lang != "sh" && b.Lang != "bash" {
			return false, fmt.Errorf("expect-fail marks a shell block, not %q", b.Lang)
		}
		b.ExpectFail, b.ExpectMessage = true, msg
	case "file":
		if arg == "" || strings.ContainsAny(arg, "/ \t") {
			return false, fmt.Errorf("file needs a plain file name: <!-- doc-test: file rules.yaml -->")
		}
		b.File = arg
	case "output":
		if arg != "" {
			return false, fmt.Errorf("output takes no argument")
		}
		return true, nil
	case "fresh":
		if arg != "" || (b.Lang != "sh" && b.Lang != "bash") {
			return false, fmt.Errorf("fresh marks a shell block and takes no argument")
		}
		b.Fresh = true
	default:
		return false, fmt.Errorf("unknown doc-test marker %q (skip, expect-fail, file, output, fresh)", verb)
	}
	return false, nil
}

// Segments splits a page's blocks before each block marked fresh: each segment runs in a bash of its own,
// the fresh ones on clusters reset to never initialized.
func Segments(blocks []*Block) [][]*Block {
	var out [][]*Block
	start := 0
	for i, b := range blocks {
		if b.Fresh && i > start {
			out = append(out, blocks[start:i])
			start = i
		}
	}
	if start < len(blocks) {
		out = append(out, blocks[start:])
	}
	return out
}

// Script is a page's blocks as one bash script, with what it needs to say where a failure happened.
type Script struct {
	Text   string
	source map[int]source // script line -> page line, for the lines of blocks
}

type source struct {
	block *Block
	line  int // in the page
}

// Trace lines the script appends to its trace file, one per event:
//
//	begin N            block N (an index into the page's blocks) starts
//	end N              ... and ended as it should
//	fail LINE STATUS   a command at script line LINE exited with STATUS (the last one is the one that stopped)
//	unexpected-success N / missing-message N   an expect-fail block did not fail, or failed without its text
//	output N FILE      block N's combined output is in FILE
const (
	traceBegin   = "begin"
	traceEnd     = "end"
	traceFail    = "fail"
	traceSuccess = "unexpected-success"
	traceMessage = "missing-message"
	traceOutput  = "output"
)

// NewScript writes the runnable blocks of a page as one bash script run with set -euo pipefail (and -E,
// so that the ERR trap that records the failing line also sees functions and subshells). trace is the
// file the script appends its events to; outDir receives the output of the blocks whose output a page
// shows, and of expect-fail blocks.
func NewScript(blocks []*Block, trace, outDir string) *Script {
	s := &Script{source: map[int]source{}}
	var b strings.Builder
	line := 0
	emit := func(text string) {
		b.WriteString(text)
		b.WriteByte('\n')
		line++
	}
	trap := `trap '__dt_rc=$?; printf "` + traceFail + ` %s %s\n" "$LINENO" "$__dt_rc" >> ` + shellQuote(trace) + `' ERR`
	emit("set -Eeuo pipefail")
	emit(trap)
	emit("__dt_event() { printf '%s\\n' \"$*\" >> " + shellQuote(trace) + "; }")
	for i, blk := range blocks {
		if blk.File != "" {
			emit("cat > " + shellQuote(blk.File) + " <<'__DT_EOF__'")
			for _, l := range strings.SplitAfter(strings.TrimSuffix(blk.Body, "\n"), "\n") {
				emit(strings.TrimSuffix(l, "\n"))
			}
			emit("__DT_EOF__")
			continue
		}
		if !blk.Runs() {
			continue
		}
		out := shellQuote(fmt.Sprintf("%s/block-%d.out", outDir, i))
		emit(fmt.Sprintf("__dt_event %s %d", traceBegin, i))
		body := func() {
			for j, l := range strings.SplitAfter(strings.TrimSuffix(blk.Body, "\n"), "\n") {
				s.source[line+1] = source{block: blk, line: blk.Line + 1 + j}
				emit(strings.TrimSuffix(l, "\n"))
			}
		}
		switch {
		case blk.ExpectFail:
			// The block runs in a subshell of its own, with -e in force there (outside any condition,
			// where bash would ignore it) and the page's ERR trap off: its failure is the point.
			emit("trap - ERR; set +e")
			emit("(")
			emit("trap - ERR; set -e")
			body()
			emit(") > " + out + " 2>&1")
			emit("__dt_rc=$?; set -e; " + trap)
			emit("cat " + out)
			emit(fmt.Sprintf("__dt_event %s %d %s", traceOutput, i, out))
			emit(fmt.Sprintf(`if [ "$__dt_rc" -eq 0 ]; then __dt_event %s %d; exit 1; fi`, traceSuccess, i))
			if blk.ExpectMessage != "" {
				emit(fmt.Sprintf(`if ! grep -qF -- %s %s; then __dt_event %s %d; exit 1; fi`, shellQuote(blk.ExpectMessage), out, traceMessage, i))
			}
		case blk.Output != nil:
			emit("{")
			body()
			emit("} > " + out + " 2>&1")
			emit("cat " + out)
			emit(fmt.Sprintf("__dt_event %s %d %s", traceOutput, i, out))
		default:
			body()
		}
		emit(fmt.Sprintf("__dt_event %s %d", traceEnd, i))
	}
	s.Text = b.String()
	return s
}

// shellQuote quotes s for bash, in single quotes.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Result is what a page's run did, read from its trace.
type Result struct {
	Ran     []*Block          // blocks that ran as they should, in order
	Outputs map[*Block]string // the output files of blocks whose output was kept
	Failed  *Block            // the block that stopped the page, if any
	Line    int               // ... the page line of the command that stopped it (0: unknown)
	Command string            // ... its text, from the page
	Status  int               // ... its exit status
	Reason  string            // ... in words
}

// Read interprets a trace written by the script for blocks; exited is the script's exit status.
func (s *Script) Read(blocks []*Block, trace string, exited int) *Result {
	r := &Result{Outputs: map[*Block]string{}}
	var current *Block
	lastFail, lastStatus := 0, 0
	for _, l := range strings.Split(trace, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		blk := func() *Block {
			if n >= 0 && n < len(blocks) {
				return blocks[n]
			}
			return nil
		}
		switch f[0] {
		case traceBegin:
			current, lastFail = blk(), 0
		case traceEnd:
			if b := blk(); b != nil {
				r.Ran = append(r.Ran, b)
			}
			current = nil
		case traceFail:
			lastFail = n
			if len(f) > 2 {
				lastStatus, _ = strconv.Atoi(f[2])
			}
		case traceOutput:
			if b := blk(); b != nil && len(f) > 2 {
				r.Outputs[b] = f[2]
			}
		case traceSuccess:
			r.Failed, r.Reason = blk(), "was expected to fail, and exited 0"
		case traceMessage:
			r.Failed, r.Reason = blk(), fmt.Sprintf("failed as expected, without printing %q", blk().ExpectMessage)
		}
	}
	if r.Failed != nil || exited == 0 {
		if r.Failed == nil && current != nil {
			r.Failed, r.Reason = current, "never finished"
		}
		return r
	}
	r.Failed, r.Status = current, lastStatus
	if src, ok := s.source[lastFail]; ok {
		r.Failed = src.block
		r.Command, r.Line = command(src.block, src.line)
		r.Reason = fmt.Sprintf("exited %d", lastStatus)
	} else {
		r.Reason = fmt.Sprintf("the page's script exited %d", exited)
	}
	return r
}

// continues tells whether a line goes on on the next one: a backslash, or a pipe or list operator at its
// end.
func continues(l string) bool {
	l = strings.TrimRight(l, " \t")
	return strings.HasSuffix(l, `\`) || strings.HasSuffix(l, "|") || strings.HasSuffix(l, "&&")
}

// command is the command around a page line of a block (bash reports a pipeline spread over lines at
// one of its lines), with all its lines, and the page line it starts on.
func command(b *Block, line int) (string, int) {
	lines := strings.Split(strings.TrimSuffix(b.Body, "\n"), "\n")
	i := line - b.Line - 1
	if i < 0 || i >= len(lines) {
		return "", line
	}
	for i > 0 && continues(lines[i-1]) {
		i--
	}
	start := i
	for continues(lines[i]) && i+1 < len(lines) {
		i++
	}
	return strings.Join(lines[start:i+1], "\n"), b.Line + 1 + start
}

var (
	timeRE     = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	hexRE      = regexp.MustCompile(`[0-9a-f]{8,}`)
	durationRE = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms|s|m|h|d)\b`)
	numberRE   = regexp.MustCompile(`\d+`)
	spaceRE    = regexp.MustCompile(`[ \t]+`)
)

// Normalize makes output comparable across runs: timestamps, hex digests, durations and numbers become
// placeholders, runs of blanks one space (table columns move with what they hold), and blank lines and
// trailing blanks go.
func Normalize(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = timeRE.ReplaceAllString(l, "<time>")
		l = hexRE.ReplaceAllString(l, "<hex>")
		l = durationRE.ReplaceAllString(l, "<duration>")
		l = numberRE.ReplaceAllString(l, "<n>")
		l = strings.TrimSpace(spaceRE.ReplaceAllString(l, " "))
		if l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// ReplaceOutputs returns the page with the body of each output block replaced by what its block printed
// (outputs, by the output block's opening line).
func ReplaceOutputs(page string, outputs map[int]string) string {
	lines := strings.SplitAfter(page, "\n")
	var b strings.Builder
	for i := 0; i < len(lines); i++ {
		b.WriteString(lines[i])
		got, ok := outputs[i+1]
		if !ok {
			continue
		}
		// Skip the old body up to the closing fence, which is written again.
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) != "```" {
			j++
		}
		if got != "" && !strings.HasSuffix(got, "\n") {
			got += "\n"
		}
		b.WriteString(got)
		i = j - 1
	}
	return b.String()
}
