package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/lifecycle"
)

// DefaultMaxTimeout is the longest spec.timeout the controller grants unless told otherwise: an
// hour, twelve times Helm's default of five minutes, time enough for a large release with slow
// hooks, while a Release that waits for what never comes gives its worker back within the hour.
const DefaultMaxTimeout = time.Hour

// MinInterval is the shortest spec.interval, the CRD's minimum: a Release stored before the CRD
// said so is checked no more often.
const MinInterval = 10 * time.Second

// The reconcile of a Release has the lifecycle's one grace past the Release's timeout
// (lifecycle.Grace), as berth's CLI has past --timeout: what the operation writes once its
// deadline passed (the failure record, the journal, the lease) ends within it, and so does the
// write of the Release's status that says what came of it (statusContext). No reconcile's work
// runs longer than the Release's timeout; a status write takes the grace at most.

// Conditions of a spec the controller does not follow as written; each is present only while it
// applies, with status True.
const (
	// ConditionTimeoutCapped: spec.timeout is over the controller's maximum (--max-timeout),
	// and the Release's operations run with the maximum instead.
	ConditionTimeoutCapped = "TimeoutCapped"
	// ConditionIntervalRaised: spec.interval is under MinInterval, and the Release is looked at
	// every MinInterval instead.
	ConditionIntervalRaised = "IntervalRaised"

	ReasonAboveMaximum = "AboveMaximum"
	ReasonBelowMinimum = "BelowMinimum"
)

// timeoutOf is the time a Release's reconcile has for its work: spec.timeout, or its default,
// at most maxTimeout (none when 0).
func timeoutOf(s v1alpha1.ReleaseSpec, maxTimeout time.Duration) time.Duration {
	t := defaultTimeout
	if s.Timeout != nil && s.Timeout.Duration > 0 {
		t = s.Timeout.Duration
	}
	if maxTimeout > 0 {
		t = min(t, maxTimeout)
	}
	return t
}

// withLimits holds d to the controller's limits: a timeout over maxTimeout (none when 0) is
// capped, an interval under MinInterval raised, and rel's conditions say so. The default timeout
// of a Release that sets none is lowered to a smaller maximum without a word: the Release asked
// for nothing. It returns the conditions newly set, for an Event each.
func withLimits(rel *v1alpha1.Release, d *desired, maxTimeout time.Duration) []metav1.Condition {
	var set []metav1.Condition
	limit := func(t string, applies bool, msg string) {
		if !applies {
			meta.RemoveStatusCondition(&rel.Status.Conditions, t)
			return
		}
		reason := ReasonAboveMaximum
		if t == ConditionIntervalRaised {
			reason = ReasonBelowMinimum
		}
		prev := meta.FindStatusCondition(rel.Status.Conditions, t)
		setCondition(rel, t, metav1.ConditionTrue, reason, msg)
		if prev == nil || prev.Message != msg {
			set = append(set, *meta.FindStatusCondition(rel.Status.Conditions, t))
		}
	}
	capped := maxTimeout > 0 && d.Timeout > maxTimeout
	limit(ConditionTimeoutCapped, capped && rel.Spec.Timeout != nil, fmt.Sprintf("spec.timeout %s is over the controller's maximum of %s (--max-timeout): each operation runs with %s", d.Timeout, maxTimeout, maxTimeout))
	if capped {
		d.Timeout = maxTimeout
	}
	raised := d.Interval < MinInterval
	limit(ConditionIntervalRaised, raised, fmt.Sprintf("spec.interval %s is under the minimum of %s: the Release is looked at every %s", d.Interval, MinInterval, MinInterval))
	if raised {
		d.Interval = MinInterval
	}
	return set
}

// limitEvents records an Event for each condition withLimits newly set.
func (r *Reconciler) limitEvents(rel *v1alpha1.Release, set []metav1.Condition) {
	for _, c := range set {
		r.Recorder.Eventf(rel, nil, corev1.EventTypeWarning, c.Type, "reconcile", "%s", c.Message)
	}
}

// ReconcileTimeoutError is the cause of a reconcile's end at its deadline: the Release's
// timeout, for its work, and lifecycle.Grace past it for everything.
type ReconcileTimeoutError struct {
	Timeout time.Duration
	Grace   bool
}

func (e *ReconcileTimeoutError) Error() string {
	if e.Grace {
		return fmt.Sprintf("reconcile timed out %s after the Release's timeout of %s", lifecycle.Grace, e.Timeout)
	}
	return fmt.Sprintf("timed out after %s, the Release's timeout", e.Timeout)
}

// reconcileBounds returns the contexts of a reconcile of a Release whose timeout is timeout: the
// reconcile's, which ends lifecycle.Grace after the timeout, and its work's, which ends at it.
// The work is everything up to and including the operation, whose own deadline is the work's;
// the reconcile's context is what the operation sees as the controller stopping, and what is
// written after the work ends is written under it.
func reconcileBounds(ctx context.Context, timeout time.Duration) (reconcile, work context.Context, cancel func()) {
	reconcile, cancelReconcile := context.WithTimeoutCause(ctx, timeout+lifecycle.Grace, &ReconcileTimeoutError{Timeout: timeout, Grace: true})
	work, cancelWork := context.WithTimeoutCause(reconcile, timeout, &ReconcileTimeoutError{Timeout: timeout})
	return reconcile, work, func() { cancelWork(); cancelReconcile() }
}

// stopping says the controller is stopping: ctx, a reconcile's context, was canceled, not ended
// by the reconcile's deadline.
func stopping(ctx context.Context) bool {
	return ctx.Err() != nil && !errors.As(context.Cause(ctx), new(*ReconcileTimeoutError))
}

// workLeft is the time left to the work of a reconcile (work's deadline), at most timeout, and at
// least a nanosecond, since 0 would mean the default.
func workLeft(work context.Context, timeout time.Duration) time.Duration {
	if dl, ok := work.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	return max(timeout, time.Nanosecond)
}

// statusContext is the context of a write of a Release's status: ctx's values, without its end,
// for the lifecycle's one grace (lifecycle.Graced). The write is made only while the controller
// still leads (see Reconciler.Leading): one that lost its election writes nothing more.
func statusContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return lifecycle.Graced(ctx)
}

// unanswered is err, from a request to d's cluster (spec.kubeConfig) made with c, as a
// *ClusterError naming the cluster when the cluster gave no answer (the request timed out or its
// connection failed); an answer of the API server, or a cluster that is the controller's own,
// leaves err as it is.
func unanswered(d *desired, c *kube.Clients, err error) error {
	if err == nil || d.Remote == nil {
		return err
	}
	var status apierrors.APIStatus
	var cluster *ClusterError
	if errors.As(err, &status) || errors.As(err, &cluster) {
		return err
	}
	var u *url.Error
	var n net.Error
	if !errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &u) && !errors.As(err, &n) {
		return err
	}
	return &ClusterError{Host: hostOf(c.Config.Host), Secret: d.Namespace + "/" + d.Remote.Secret, Timeout: d.Timeout, Reason: ReasonClusterUnreachable, Err: err}
}
