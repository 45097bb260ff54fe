package output

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/pterm/pterm"
)

// live is the one place on a terminal where running steps show, shared by every scoped copy of a printer:
// one line per running step, with a spinner and its time so far, redrawn in place below everything
// printed. Steps of the two clusters of a one-shot command run at the same time; with a spinner each they
// raced for the same terminal line, and an outcome could be drawn twice. Here every write (a live redraw,
// an outcome, an info line) goes through one lock, and an outcome is written once, above the live lines.
type live struct {
	mu      sync.Mutex
	w       interface{ Write([]byte) (int, error) }
	drawn   bool // the terminal can show live lines (a terminal's file)
	next    int
	running []liveStep
	area    *pterm.AreaPrinter
	frame   int
	stop    chan struct{}
}

type liveStep struct {
	id    int
	text  string
	start time.Time
}

// add shows a step as running; it returns the step's id.
func (l *live) add(text string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	l.running = append(l.running, liveStep{id: l.next, text: text, start: time.Now()})
	if l.drawn && l.area == nil {
		l.startArea()
	}
	l.redraw()
	return l.next
}

// done removes a step and writes its outcome line.
func (l *live) done(id int, write func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, s := range l.running {
		if s.id == id {
			l.running = append(l.running[:i], l.running[i+1:]...)
			break
		}
	}
	l.above(write)
	if len(l.running) == 0 {
		l.stopArea()
	}
}

// print writes a line above the live ones.
func (l *live) print(write func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.above(write)
}

// above writes with the live lines out of the way; l.mu is held.
func (l *live) above(write func()) {
	if l.area == nil {
		write()
		return
	}
	_ = l.area.Stop()
	write()
	l.area = l.newArea()
	l.redraw()
}

func (l *live) newArea() *pterm.AreaPrinter {
	a := pterm.DefaultArea.WithRemoveWhenDone()
	a.SetWriter(l.w)
	started, err := a.Start()
	if err != nil {
		return nil
	}
	return started
}

// startArea starts the live area and its ticker; l.mu is held.
func (l *live) startArea() {
	l.area = l.newArea()
	if l.area == nil {
		return
	}
	stop := make(chan struct{})
	l.stop = stop
	go func() { // the spinners turn and the times count while nothing else happens
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				l.mu.Lock()
				l.frame++
				l.redraw()
				l.mu.Unlock()
			}
		}
	}()
}

// stopArea removes the live lines and stops the ticker; l.mu is held.
func (l *live) stopArea() {
	if l.area == nil {
		return
	}
	close(l.stop)
	_ = l.area.Stop()
	l.area = nil
}

// redraw shows the running steps; l.mu is held.
func (l *live) redraw() {
	if l.area == nil {
		return
	}
	var sb strings.Builder
	spin := pterm.ThemeDefault.SpinnerStyle.Sprint(spinnerFrames[l.frame%len(spinnerFrames)])
	for _, s := range l.running {
		fmt.Fprintf(&sb, "%s %s %s\n", spin, s.text, pterm.ThemeDefault.TimerStyle.Sprintf("(%s)", time.Since(s.start).Round(time.Second)))
	}
	l.area.Update(strings.TrimSuffix(sb.String(), "\n"))
}
