package output

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pterm/pterm"
)

// Board shows tasks that run at the same time (the pairs of a mesh): on a terminal, one live line per
// running task, with a spinner and its time so far, redrawn in place; each task's outcome then becomes a
// permanent line above them. In plain mode only the outcomes are printed, one line each, as tasks end.
type Board struct {
	p       *Printer
	mu      sync.Mutex
	running map[string]time.Time
	area    *pterm.AreaPrinter
	frame   int
	stop    chan struct{}
	stopped sync.WaitGroup
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// Board starts a board on the printer's writer; Stop ends it.
func (p *Printer) Board() *Board {
	b := &Board{p: p, running: map[string]time.Time{}, stop: make(chan struct{})}
	// Live lines move the cursor, which needs a terminal's file; anything else gets the outcomes only
	// (pterm would otherwise draw on stdout, which carries data).
	if _, file := p.w.(interface{ Fd() uintptr }); !p.styled || !file {
		return b
	}
	b.area = b.newArea()
	b.stopped.Add(1)
	go func() { // the spinners turn and the times count even while no task changes
		defer b.stopped.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-b.stop:
				return
			case <-t.C:
				b.mu.Lock()
				b.frame++
				b.redraw()
				b.mu.Unlock()
			}
		}
	}()
	return b
}

func (b *Board) newArea() *pterm.AreaPrinter {
	a := pterm.DefaultArea.WithRemoveWhenDone()
	a.SetWriter(b.p.w)
	started, err := a.Start()
	if err != nil {
		return nil
	}
	return started
}

// redraw shows the running tasks, in the order they started; b.mu is held.
func (b *Board) redraw() {
	if b.area == nil {
		return
	}
	keys := make([]string, 0, len(b.running))
	for k := range b.running {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y string) int { return b.running[x].Compare(b.running[y]) })
	var sb strings.Builder
	spin := pterm.ThemeDefault.SpinnerStyle.Sprint(spinnerFrames[b.frame%len(spinnerFrames)])
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s %s %s\n", spin, b.p.text(k), pterm.ThemeDefault.TimerStyle.Sprintf("(%s)", time.Since(b.running[k]).Round(100*time.Millisecond)))
	}
	b.area.Update(strings.TrimSuffix(sb.String(), "\n"))
}

// Start shows a task as running.
func (b *Board) Start(task string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running[task] = time.Now()
	b.redraw()
}

// Done ends a task with its outcome: a success line, or a warning line when failed.
func (b *Board) Done(task, outcome string, failed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.running, task)
	kind := "SUCCESS"
	if failed {
		kind = "WARNING"
	}
	if b.area == nil {
		if kind == "SUCCESS" {
			kind = "INFO"
		}
		b.p.line(kind, outcome)
		return
	}
	// The live lines go, the outcome is written where they were, and they come back below it.
	_ = b.area.Stop()
	b.p.prefix(kind).Println(b.p.text(outcome))
	b.area = b.newArea()
	b.redraw()
}

// Stop removes the live lines; the outcomes stay.
func (b *Board) Stop() {
	if b.area == nil {
		return
	}
	close(b.stop)
	b.stopped.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	_ = b.area.Stop()
	b.area = nil
}
