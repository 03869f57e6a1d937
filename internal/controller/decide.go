package controller

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

// The controller's decisions are the decide*.go files: what a reconcile asks lifecycle.Next and
// with which account (decide.go), a deleted Release's uninstall or letting go
// (decide_finalize.go), the retries a failed attempt spends and when (decide_retries.go), a
// forced retry asked by annotation (decide_requested.go), and the guard that an attempt is still
// what was decided once it holds the release (decide_stale.go). The controller acts on what they
// answer and decides nothing elsewhere.

// decide is what the reconcile of rel does, as lifecycle.Next decides it for the release in
// state s: what the spec asks (d, resolved to chartVersion), the controller's way (an upgrade
// that installs a release that has none), weighed against what rel's status says (statusAccount).
// wait is how long a failed attempt waits before its retry; 0 when none is due.
func decide(rel *v1alpha1.Release, s lifecycle.State, d *desired, chartVersion string, now time.Time) (acts []lifecycle.Action, wait time.Duration, err error) {
	account, wait := statusAccount(rel, s, d, chartVersion, now)
	acts, err = lifecycle.Next(s, lifecycle.Wanted{
		Operation: release.OpUpgrade, Install: true, ChartVersion: chartVersion, Values: d.Values, Account: &account,
	})
	return acts, wait, err
}

// statusAccount is what rel's status says of its release and of its last attempt, against the chart
// version and values the spec resolves to now: the controller's part of what lifecycle.Next
// decides from. An attempt that ended in failure is not repeated until its retries allow it
// (wait is how long until the next is due); one that was interrupted (the controller stopped
// while Reconciling) is resumed, or, when it released what is asked before the controller
// stopped, only said.
func statusAccount(rel *v1alpha1.Release, s lifecycle.State, d *desired, chartVersion string, now time.Time) (lifecycle.Account, time.Duration) {
	st := rel.Status
	reconciling := meta.FindStatusCondition(st.Conditions, ConditionReconciling) != nil
	wait, retry := retryWait(rel, d, s, now)
	return lifecycle.Account{
		Revision: st.Revision,
		AsAsked:  st.ChartVersion == chartVersion && st.ValuesDigest == d.ValuesDigest,
		Current: meta.IsStatusConditionTrue(st.Conditions, ConditionReady) && st.ObservedGeneration == rel.Generation &&
			len(st.Blockers) == 0,
		Attempted: st.LastAttemptedGeneration == rel.Generation && st.LastAttemptedChartVersion == chartVersion &&
			st.LastAttemptedValuesDigest == d.ValuesDigest,
		Underway: reconciling,
		Failed:   meta.IsStatusConditionFalse(st.Conditions, ConditionReady) && !reconciling,
		Retry:    retry && wait == 0,
	}, wait
}
