package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// ConditionHealthy says whether the release's objects are ready between operations, as the
// periodic check of the Release finds them live: True when every object the deployed revision
// records is ready, False (reason Degraded) naming those that are not, Unknown when they could
// not be read. The controller only reports it: it never acts on it. It is present while the
// Release's objects are read between operations: with spec.drift.mode detect or correct, whose
// check reads them anyway, and, with drift disabled, when spec.install or spec.upgrade has a
// watchFor (the Release asked to be watched); otherwise the objects are not read and the
// condition is absent.
const ConditionHealthy = "Healthy"

const (
	// ReasonHealthy: every object of the release is ready.
	ReasonHealthy = "Healthy"
	// ReasonDegraded: of Healthy, objects of the release are not ready or failed; of Ready, a
	// regression in the operation's watch window failed it.
	ReasonDegraded = "Degraded"
	// ReasonHealthUnknown: the objects could not be read.
	ReasonHealthUnknown = "HealthUnknown"
)

// healthReported says whether the Healthy condition of d is kept: when its objects are read
// between operations (see ConditionHealthy).
func healthReported(d *desired) bool {
	return d.Drift.Mode == v1alpha1.DriftDetect || d.Drift.Mode == v1alpha1.DriftCorrect || d.watches()
}

// unhealthy is an object of the release that is not ready.
type unhealthy struct {
	ID resource.Identity
	// Missing: the object is gone.
	Missing bool
	// State and Message are its readiness.
	State   readiness.State
	Message string
}

// healthTally judges the live objects of a release as the periodic check reads them, with the
// readiness rules of the operations' waits (the readiness annotations, the Release's health
// checks, the built-in rules). A nil tally judges nothing.
type healthTally struct {
	opts readiness.Options
	// judged counts the objects judged; bad are those not ready.
	judged int
	bad    []unhealthy
}

// newHealthTally returns the tally of d's objects; nil when d's health is not reported.
func newHealthTally(d *desired) *healthTally {
	if !healthReported(d) {
		return nil
	}
	// A Job is judged by its outcome: one that failed is not healthy (readiness with
	// WaitForJobs); one still running is (see see).
	return &healthTally{opts: readiness.Options{WaitForJobs: true, Checks: d.HealthChecks}}
}

// see judges object id, live as read (nil: missing).
func (t *healthTally) see(id resource.Identity, live *unstructured.Unstructured) {
	if t == nil {
		return
	}
	t.judged++
	if live == nil {
		t.bad = append(t.bad, unhealthy{ID: id, Missing: true})
		return
	}
	res := readiness.Compute(live, t.opts)
	if res.State == readiness.Ready || (res.State == readiness.InProgress && id.Kind == "Job" && id.Group == "batch" && res.Expression == "") {
		return
	}
	t.bad = append(t.bad, unhealthy{ID: id, State: res.State, Message: res.Message})
}

// forget leaves out of the tally the objects of ids (put back by drift correction, and not
// judged as they are now).
func (t *healthTally) forget(ids []resource.Identity) {
	if t == nil || len(ids) == 0 {
		return
	}
	keep := t.bad[:0]
	for _, b := range t.bad {
		gone := false
		for _, id := range ids {
			if b.ID == id && b.Missing {
				gone = true
			}
		}
		if !gone {
			keep = append(keep, b)
		}
	}
	t.bad = keep
}

// Bounds of the Healthy message: objects named, characters in all.
const (
	healthObjectsShown = 10
	maxHealthMessage   = 2000
)

// healthMessage names the objects of revision that are not ready, within bounds.
func healthMessage(revision int, bad []unhealthy) string {
	parts := make([]string, len(bad))
	for i, b := range bad {
		switch {
		case b.Missing:
			parts[i] = b.ID.String() + " is missing"
		case b.State == readiness.Failed:
			parts[i] = fmt.Sprintf("%s failed: %s", b.ID, firstLine(b.Message))
		default:
			parts[i] = fmt.Sprintf("%s is not ready: %s", b.ID, firstLine(b.Message))
		}
	}
	msg := strings.Join(parts[:min(len(parts), healthObjectsShown)], "; ")
	if len(parts) > healthObjectsShown {
		msg += fmt.Sprintf("; and %d more object(s)", len(parts)-healthObjectsShown)
	}
	return cut(fmt.Sprintf("%d object(s) of revision %d are not ready: %s", len(bad), revision, msg), maxHealthMessage)
}

// healthVerdict is the Healthy condition of a tally of revision's objects; err is what kept
// objects from being read (nil: none).
func healthVerdict(t *healthTally, revision int, err error) (metav1.ConditionStatus, string, string) {
	switch {
	case len(t.bad) > 0:
		return metav1.ConditionFalse, ReasonDegraded, healthMessage(revision, t.bad)
	case err != nil:
		return metav1.ConditionUnknown, ReasonHealthUnknown, "the release's objects could not all be read: " + errorLine(err)
	default:
		return metav1.ConditionTrue, ReasonHealthy, fmt.Sprintf("the %d object(s) of revision %d are ready", t.judged, revision)
	}
}

// reportHealth sets rel's Healthy condition from tally t of revision's objects (err: what kept
// some from being read), and records an Event when it turns False (Degraded) and when it turns
// True again after it was False; none while it stays as it is, whatever its message says.
func (r *Reconciler) reportHealth(ctx context.Context, rel *v1alpha1.Release, t *healthTally, revision int, err error) {
	if t == nil || errors.Is(err, release.ErrNotFound) {
		// Not reported, or no revision is recorded (an install undone): nothing to judge.
		meta.RemoveStatusCondition(&rel.Status.Conditions, ConditionHealthy)
		return
	}
	status, reason, msg := healthVerdict(t, revision, err)
	var was metav1.ConditionStatus
	if prev := meta.FindStatusCondition(rel.Status.Conditions, ConditionHealthy); prev != nil {
		was = prev.Status
	}
	setCondition(rel, ConditionHealthy, status, reason, msg)
	switch {
	case status == metav1.ConditionFalse && was != metav1.ConditionFalse:
		r.event(ctx, rel, corev1.EventTypeWarning, ReasonDegraded, "health", msg)
	case status == metav1.ConditionTrue && was == metav1.ConditionFalse:
		r.event(ctx, rel, corev1.EventTypeNormal, ReasonHealthy, "health", msg)
	}
}

// healthAfter sets rel's Healthy condition once an install or upgrade recorded revision
// deployed: its objects were ready when it ended, when it waited for them; unknown until the next
// check otherwise.
func healthAfter(rel *v1alpha1.Release, d *desired, revision int, waited bool) {
	switch {
	case !healthReported(d):
		meta.RemoveStatusCondition(&rel.Status.Conditions, ConditionHealthy)
	case waited:
		setCondition(rel, ConditionHealthy, metav1.ConditionTrue, ReasonHealthy,
			fmt.Sprintf("the objects of revision %d were ready when it was deployed", revision))
	default:
		healthUnknown(rel, d, fmt.Sprintf("revision %d was deployed without waiting for its objects: the next check of the Release says whether they are ready", revision))
	}
}

// healthUnknown says, until the next check of the Release, that the health of its objects is
// unknown (msg says why): an operation changed them.
func healthUnknown(rel *v1alpha1.Release, d *desired, msg string) {
	if !healthReported(d) {
		meta.RemoveStatusCondition(&rel.Status.Conditions, ConditionHealthy)
		return
	}
	setCondition(rel, ConditionHealthy, metav1.ConditionUnknown, ReasonHealthUnknown, msg)
}
