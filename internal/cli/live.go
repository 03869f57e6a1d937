package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
)

// progressFor renders progress for w: a live view on a terminal, plain lines otherwise.
func progressFor(w io.Writer) func(engine.Event) {
	if isTerminal(w) {
		return newLiveView(w).handle
	}
	return progressPrinter(w)
}

// isTerminal reports whether w is a terminal that can show colours and redraw lines.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb"
}

// maxWaiting bounds the rows the live view redraws.
const maxWaiting = 12

// liveView prints what happens as plain lines that scroll, and below them a table, redrawn in
// place every second, of what is under way: each object being waited on and each hook running,
// with its step, its state and how long it has taken so far.
type liveView struct {
	mu      sync.Mutex
	w       io.Writer
	lines   func(engine.Event) // the plain printer, for everything that scrolls
	rows    map[resource.Identity]*liveRow
	order   []resource.Identity
	drawn   int
	now     func() time.Time
	ticking bool
	// tick is how often the table is redrawn while it has rows; 0 redraws only on events.
	tick time.Duration
}

// liveRow is one object under way.
type liveRow struct {
	step, state string
	since       time.Time
}

func newLiveView(w io.Writer) *liveView {
	return &liveView{w: w, lines: progressPrinter(w), rows: map[resource.Identity]*liveRow{}, now: time.Now, tick: time.Second}
}

func (v *liveView) handle(e engine.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.erase()
	switch e.Type {
	case engine.ObjectProgress:
		if e.State == readiness.InProgress {
			v.set(e.Object, e.Step, e.Message)
		} else {
			v.forget(e.Object)
			v.lines(e)
		}
	case engine.HookStarted:
		v.set(e.Object, e.Step+" hook", "running")
		v.lines(e)
	case engine.HookPodFailed:
		v.set(e.Object, e.Step+" hook", e.Message)
		v.lines(e)
	case engine.HookDone, engine.HookFailed:
		v.forget(e.Object)
		v.lines(e)
	case engine.StepDone, engine.StepFailed:
		v.rows, v.order = map[resource.Identity]*liveRow{}, nil
		v.lines(e)
	default:
		v.lines(e)
	}
	v.draw()
	if len(v.order) > 0 && !v.ticking && v.tick > 0 {
		v.ticking = true
		go v.redraw()
	}
}

// redraw redraws the table every tick while it has rows, so that the elapsed times move.
func (v *liveView) redraw() {
	t := time.NewTicker(v.tick)
	defer t.Stop()
	for range t.C {
		v.mu.Lock()
		if len(v.order) == 0 {
			v.ticking = false
			v.mu.Unlock()
			return
		}
		v.erase()
		v.draw()
		v.mu.Unlock()
	}
}

func (v *liveView) set(id resource.Identity, step, state string) {
	r, ok := v.rows[id]
	if !ok {
		r = &liveRow{since: v.now()}
		v.rows[id] = r
		v.order = append(v.order, id)
	}
	r.step, r.state = step, state
}

func (v *liveView) forget(id resource.Identity) {
	delete(v.rows, id)
	v.order = slices.DeleteFunc(v.order, func(x resource.Identity) bool { return x == id })
}

// erase moves the cursor up over the table last drawn and clears to the end of the screen.
func (v *liveView) erase() {
	if v.drawn > 0 {
		fmt.Fprintf(v.w, "\x1b[%dA\x1b[J", v.drawn)
		v.drawn = 0
	}
}

func (v *liveView) draw() {
	if len(v.order) == 0 {
		return
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tOBJECT\tSTATE\tELAPSED")
	n := 1
	now := v.now()
	for i, id := range v.order {
		if i == maxWaiting {
			fmt.Fprintf(tw, "\t… and %d more\t\t\n", len(v.order)-maxWaiting)
			n++
			break
		}
		r := v.rows[id]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.step, id, firstLine(r.state), now.Sub(r.since).Round(100*time.Millisecond))
		n++
	}
	tw.Flush()
	io.WriteString(v.w, b.String())
	v.drawn = n
}

// firstLine is the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
