package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

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

// maxWaiting bounds the lines the live view redraws.
const maxWaiting = 12

// liveView prints what happens as plain lines that scroll, and below them a block, redrawn in
// place, of the objects being waited on and why each is not there yet.
type liveView struct {
	mu      sync.Mutex
	w       io.Writer
	lines   func(engine.Event) // the plain printer, for everything that scrolls
	waiting map[resource.Identity]string
	order   []resource.Identity
	drawn   int
}

func newLiveView(w io.Writer) *liveView {
	return &liveView{w: w, lines: progressPrinter(w), waiting: map[resource.Identity]string{}}
}

func (v *liveView) handle(e engine.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.erase()
	switch {
	case e.Type == engine.ObjectProgress && e.State == readiness.InProgress:
		if _, ok := v.waiting[e.Object]; !ok {
			v.order = append(v.order, e.Object)
		}
		v.waiting[e.Object] = e.Message
	case e.Type == engine.ObjectProgress:
		v.forget(e.Object)
		v.lines(e)
	case e.Type == engine.StepDone || e.Type == engine.StepFailed:
		v.waiting, v.order = map[resource.Identity]string{}, nil
		v.lines(e)
	default:
		v.lines(e)
	}
	v.draw()
}

func (v *liveView) forget(id resource.Identity) {
	delete(v.waiting, id)
	v.order = slices.DeleteFunc(v.order, func(x resource.Identity) bool { return x == id })
}

// erase moves the cursor up over the block last drawn and clears to the end of the screen.
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
	fmt.Fprintf(&b, "waiting for %d object(s):\n", len(v.order))
	n := 1
	for i, id := range v.order {
		if i == maxWaiting {
			fmt.Fprintf(&b, "  … and %d more\n", len(v.order)-maxWaiting)
			n++
			break
		}
		fmt.Fprintf(&b, "  %s: %s\n", id, v.waiting[id])
		n++
	}
	io.WriteString(v.w, b.String())
	v.drawn = n
}
