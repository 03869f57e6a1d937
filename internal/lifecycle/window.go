package lifecycle

import (
	"time"

	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// Window is the watch window of a journalled install, upgrade or rollback (--watch-for): what it
// watches, for how long, and since when.
type Window struct {
	// Step is the plan's watch step: its ID, and the Revision whose objects it watches.
	Step     string
	Revision int
	Objects  []resource.Identity
	plan.Window
	// Started is when the window started; zero when it has not yet, or the journal does not say
	// (one written before journals did).
	Started time.Time
	// Done says the window ended with no regression.
	Done bool
}

// Left is what is left of the window at now; For when it has not started.
func (w *Window) Left(now time.Time) time.Duration {
	return w.Window.Left(w.Started, now)
}

// WindowOf returns the watch window of the operation journal j records; nil when its plan has none.
func WindowOf(j *release.Journal) *Window {
	if j == nil || j.Plan == nil {
		return nil
	}
	for _, s := range j.Plan.Steps {
		if s.Action != plan.Watch || s.Window == nil {
			continue
		}
		return &Window{Step: s.ID, Revision: j.Revision, Objects: s.Objects, Window: *s.Window,
			Started: j.WatchStarted, Done: j.StepDone(s.ID)}
	}
	return nil
}
