package controller

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

// ReasonRetriesExhausted: a failed install or upgrade was tried again as often as the spec
// allows.
const ReasonRetriesExhausted = "RetriesExhausted"

// defaultRetryBackoff is the wait before the first retry when retryBackoff is not set.
const defaultRetryBackoff = 30 * time.Second

// minRetryBackoff is the shortest retryBackoff taken (the CRD refuses shorter ones too): a retry
// is a whole install or upgrade again, so a Release whose retries come faster would keep a worker
// busy failing; 1s still gives quick feedback while trying a chart, and the doubling spaces the
// retries after it.
const minRetryBackoff = time.Second

// maxRetryBackoff bounds the doubling of the backoff.
const maxRetryBackoff = 24 * time.Hour

// checkRetries checks the retries of install or upgrade (field).
func checkRetries(field string, op v1alpha1.OperationSpec) error {
	if op.Retries < 0 {
		return invalid(field+".retries", "must not be negative")
	}
	if op.RetryBackoff != nil && op.RetryBackoff.Duration < minRetryBackoff {
		return invalid(field+".retryBackoff", "must be at least %s, like 30s", minRetryBackoff)
	}
	return nil
}

// retrySpec is the spec field, and the operation, whose retries a failed attempt at the release
// in state s spends, as lifecycle decides it (State.Retries): install until a revision was
// deployed (a failed first install included), upgrade once one was.
func (d *desired) retrySpec(s lifecycle.State) (string, v1alpha1.OperationSpec) {
	if s.Retries() == release.OpInstall {
		return "install", d.Install.OperationSpec
	}
	return "upgrade", d.Upgrade.OperationSpec
}

// backoff is the wait after the failures-th failure: the retry backoff, doubled for each
// failure after the first.
func backoff(op v1alpha1.OperationSpec, failures int32) time.Duration {
	b := defaultRetryBackoff
	if op.RetryBackoff != nil {
		b = max(op.RetryBackoff.Duration, minRetryBackoff)
	}
	for i := int32(1); i < failures && b < maxRetryBackoff; i++ {
		b *= 2
	}
	return min(b, maxRetryBackoff)
}

// retryWait says whether rel's failed attempt at the release in state s is tried again, and how
// long from now.
func retryWait(rel *v1alpha1.Release, d *desired, s lifecycle.State, now time.Time) (time.Duration, bool) {
	_, op := d.retrySpec(s)
	failures := rel.Status.Failures
	if failures == 0 || failures > op.Retries || retriedNever(rel) {
		return 0, false
	}
	failedAt := now
	if h := rel.Status.History; len(h) > 0 {
		failedAt = h[0].StartedAt.Add(h[0].Duration.Duration)
	}
	return max(failedAt.Add(backoff(op, failures)).Sub(now), 0), true
}

// startAttempt records what an install or upgrade attempts; a new generation, chart version or
// values start a new count of failures.
func startAttempt(rel *v1alpha1.Release, chartVersion, valuesDigest string) {
	st := &rel.Status
	if st.LastAttemptedGeneration != rel.Generation || st.LastAttemptedChartVersion != chartVersion || st.LastAttemptedValuesDigest != valuesDigest {
		st.Failures = 0
	}
	st.LastAttemptedGeneration = rel.Generation
	st.LastAttemptedChartVersion, st.LastAttemptedValuesDigest = chartVersion, valuesDigest
}

// attemptFailed counts a failed install or upgrade and marks rel failed with reason: Stalled
// when it is not tried again (with reason RetriesExhausted when retries were spent; a release
// refused for the size of its record is never tried again). s is the state the attempt began
// from. It returns when to look at rel again.
func attemptFailed(rel *v1alpha1.Release, d *desired, s lifecycle.State, reason string, err error) time.Duration {
	rel.Status.Failures++
	wait, retry := retryWait(rel, d, s, time.Now())
	never := recordTooLarge(err)
	retry = retry && !never
	markFailed(rel, reason, err, !retry)
	if retry {
		return wait
	}
	if field, op := d.retrySpec(s); op.Retries > 0 && !never {
		setCondition(rel, ConditionStalled, metav1.ConditionTrue, ReasonRetriesExhausted,
			fmt.Sprintf("%d attempts failed (%s.retries: %d), the last with: %s", rel.Status.Failures, field, op.Retries, errorLine(err)))
	}
	return d.Interval
}
