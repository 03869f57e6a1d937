package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller/status"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

// reportDelay is how long a step of an operation runs before status.currentStep says so: the
// status is written once for each change of phase (the operation starting, its watch window,
// its outcome), and a step only when it is still running after this, so that a quick operation
// costs two status writes however many steps it has.
const reportDelay = 2 * time.Second

// stepReports writes to a Release's status.currentStep the step or hook an operation runs,
// once it has run for reportDelay, at most one write at a time; the start of a watch window
// is written at once, with the Reconciling and Ready conditions that say so. stop ends it:
// nothing is written after.
type stepReports struct {
	// write patches the Release's status with status.
	write func(fields map[string]any)
	// after runs f after d unless the function it returns is called first (time.AfterFunc).
	after func(d time.Duration, f func()) (stop func() bool)
	now   func() time.Time
	// watching are the status fields that say revision is Ready and watched.
	watching func(revision int) map[string]any

	mu sync.Mutex
	// latest is the step running, since latestAt; written is the step status.currentStep says.
	latest, written string
	latestAt        time.Time
	cancel          func() bool
	stopped         bool
}

// handle is the engine event handler.
func (s *stepReports) handle(e engine.Event) {
	var step string
	switch e.Type {
	case engine.StepStarted:
		if strings.HasPrefix(e.Step, "record/") {
			return // a write of the release's record: quick, and not worth a write of its own
		}
		step = e.Step
		if e.Message != "" {
			step += ": " + e.Message
		}
	case engine.HookStarted:
		step = fmt.Sprintf("%s hook %s", e.Step, e.Object)
	default:
		return
	}
	step = firstLine(step)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.latest, s.latestAt = step, s.now()
	if revision, ok := watchStep(e.Step); ok && s.watching != nil {
		// A change of phase: the release is Ready, and watched.
		fields := s.watching(revision)
		fields["currentStep"] = step
		s.write(fields)
		s.written = step
		return
	}
	s.arm(reportDelay)
}

// arm makes the latest step be written after d, unless a write is already due.
func (s *stepReports) arm(d time.Duration) {
	if s.cancel == nil {
		s.cancel = s.after(d, s.flush)
	}
}

// flush writes the latest step once it has run for reportDelay.
func (s *stepReports) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancel = nil
	if s.stopped || s.latest == s.written {
		return
	}
	if ran := s.now().Sub(s.latestAt); ran < reportDelay {
		s.arm(reportDelay - ran)
		return
	}
	s.write(map[string]any{"currentStep": s.latest})
	s.written = s.latest
}

// stop ends the reports: what the operation did is written with its outcome.
func (s *stepReports) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.cancel != nil {
		s.cancel()
		s.cancel = nil
	}
}

// stepReporter returns the reports of the steps and hooks of an operation on rel (stepReports).
func (r *Reconciler) stepReporter(ctx context.Context, rel *v1alpha1.Release) *stepReports {
	return r.operationReporter(ctx, rel, 0, nil)
}

// operationReporter is stepReporter for an install or upgrade whose watch window lasts window
// (0: none): when the window's step starts, the Reconciling and Ready conditions say too that the
// release is Ready and watched (watchingMessage), for what is left of the window when the
// operation resumes one an earlier run started (its journal, read from journals, says when).
func (r *Reconciler) operationReporter(ctx context.Context, rel *v1alpha1.Release, window time.Duration, journals *release.Journals) *stepReports {
	// The conditions as the operation's start wrote them, which a window's report rewrites.
	conditions := slices.Clone(rel.Status.Conditions)
	generation := rel.Generation
	key := client.ObjectKeyFromObject(rel)
	name, began := rel.Status.ReleaseName, time.Now()
	return &stepReports{
		after: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop },
		now:   time.Now,
		watching: func(revision int) map[string]any {
			left := windowLeft(ctx, journals, name, window, began)
			return map[string]any{"conditions": watchingConditions(conditions, generation, watchingMessage(revision, left, window))}
		},
		write: func(fields map[string]any) {
			patch, err := json.Marshal(map[string]any{"status": fields})
			if err != nil {
				return
			}
			target := &v1alpha1.Release{}
			target.Namespace, target.Name = key.Namespace, key.Name
			if err := r.Client.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil {
				log.FromContext(ctx).Error(err, "report the current step")
			}
		},
	}
}

// watchStep says whether step is the watch window of a revision (watch/REVISION), and which.
func watchStep(step string) (int, bool) {
	rest, ok := strings.CutPrefix(step, "watch/")
	if !ok {
		return 0, false
	}
	revision, err := strconv.Atoi(rest)
	return revision, err == nil
}

// journalsOf are the journals of clients' namespace; nil when its store cannot be opened.
func (r *Reconciler) journalsOf(clients *kube.Clients) *release.Journals {
	store, err := r.store(clients)
	if err != nil {
		return nil
	}
	return store.Journals()
}

// windowLeft is what is left of the watch window of release name, of window, as its watch step
// starts: all of it, unless the journal in journals says an earlier run started it, before
// began (when this operation started); then what that run left of it (plan.Window.Left), the
// same as the operation watches for. Computed once, as the step starts; a journal that cannot
// be read leaves the whole window said.
func windowLeft(ctx context.Context, journals *release.Journals, name string, window time.Duration, began time.Time) time.Duration {
	if journals == nil || window <= 0 {
		return window
	}
	j, _, err := journals.Read(ctx, name)
	if err != nil {
		return window
	}
	w := lifecycle.WindowOf(j)
	if w == nil || w.Started.IsZero() || !w.Started.Before(began) {
		return window
	}
	return w.Window.Left(w.Started, time.Now())
}

// watchingMessage says that revision is Ready and watched for left of its window (window 0: as
// long as its window lasts, which a resumed operation does not know); left is window unless
// the window was resumed.
func watchingMessage(revision int, left, window time.Duration) string {
	if window <= 0 {
		return fmt.Sprintf("revision %d is Ready; watching its objects until its watch window ends", revision)
	}
	if left < window {
		return fmt.Sprintf("revision %d is Ready; watching its objects for the %s left of its %s window", revision, left.Round(time.Second), window)
	}
	return fmt.Sprintf("revision %d is Ready; watching its objects for %s", revision, window)
}

// watchingConditions are conditions with Reconciling and Ready saying msg, as markReconciling
// says them, for generation: the whole list, as a merge patch replaces it.
func watchingConditions(conditions []metav1.Condition, generation int64, msg string) []metav1.Condition {
	out := slices.Clone(conditions)
	for _, t := range []string{ConditionReconciling, ConditionReady} {
		is := metav1.ConditionTrue
		if t == ConditionReady {
			is = metav1.ConditionUnknown
		}
		status.PutCondition(&out, metav1.Condition{Type: t, Status: is, Reason: ReasonProgressing, Message: msg, ObservedGeneration: generation})
	}
	return out
}
