package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

// holdAt acts on spec.rollbackTo: the release is rolled back to the revision asked, once, with
// the reason in its history, and then held there: neither installed nor upgraded while the
// spec asks for it. Its work runs under ctx; what it writes after, under bound.
func (r *Reconciler) holdAt(bound, ctx context.Context, in *reconciliation) (ctrl.Result, error) {
	rel, d, req := in.rel, in.d, in.d.RollbackTo
	held := func(rec *release.Release) string {
		msg := fmt.Sprintf("release %s is held at revision %d of chart %s, rolled back to revision %d", d.ReleaseName, rec.Version, chartLabel(rec), req.Revision)
		if req.Reason != "" {
			msg += ": " + req.Reason
		}
		rel.Status.Revision = rec.Version
		if rec.Chart != nil && rec.Chart.Metadata != nil {
			rel.Status.ChartName, rel.Status.ChartVersion = rec.Chart.Metadata.Name, rec.Chart.Metadata.Version
		}
		rel.Status.ReleaseName, rel.Status.TargetNamespace = d.ReleaseName, d.TargetNamespace
		// The values released are the earlier revision's, not any the spec asks: once the
		// Release is no longer held, what it asks is released, whatever it is.
		rel.Status.ValuesDigest, rel.Status.ChartDigest, rel.Status.ChartVerified = "", "", nil
		rel.Status.LastAttemptedGeneration, rel.Status.LastAttemptedChartVersion, rel.Status.LastAttemptedValuesDigest = 0, "", ""
		setCondition(rel, ConditionReleased, metav1.ConditionTrue, ReasonRolledBack, msg)
		markReady(rel, ReasonRolledBack, msg)
		return msg
	}
	if rolledBack(in.state.Last, req) {
		held(in.state.Last)
		return ctrl.Result{RequeueAfter: d.Interval}, r.patchStatus(bound, in.orig, rel)
	}
	markReconciling(rel, fmt.Sprintf("rollback to revision %d", req.Revision))
	rel.Status.CurrentStep = "rollback"
	if err := r.patchStatus(ctx, in.orig, rel); err != nil {
		return ctrl.Result{}, err
	}
	in.orig = rel.DeepCopy()
	start := time.Now()
	steps := r.operationReporter(ctx, rel, 0, r.journalsOf(in.clients))
	deps, err := r.depsFor(d, in.clients, steps.handle)
	var res *lifecycle.Result
	if err == nil {
		res, err = lifecycle.Rollback(ctx, deps, lifecycle.RollbackOptions{
			Name: d.ReleaseName, Namespace: d.TargetNamespace, Version: req.Revision, Description: rollbackDescription(req),
			WaitOptions: d.wait(d.Upgrade.OperationSpec, lifecycle.WatchOptions{}), HistoryMax: d.HistoryMax,
			NoHooks: d.Upgrade.DisableHooks, ForceReplace: d.Upgrade.Force,
		})
	}
	steps.stop()
	if stopping(bound) {
		return ctrl.Result{}, bound.Err()
	}
	out, _, err := revisionOf(res, err)
	revision := 0
	if out != nil {
		revision = out.Version
	}
	version := ""
	if out != nil && out.Chart != nil && out.Chart.Metadata != nil {
		version = out.Chart.Metadata.Version
	}
	addHistory(rel, operationRecord("rollback", start, time.Now(), revision, version, err))
	if err != nil {
		markFailed(rel, reasonOf(err, ReasonRollbackFailed), err, false)
		setCondition(rel, ConditionReleased, metav1.ConditionFalse, ReasonRollbackFailed, errorLine(err))
		r.event(bound, rel, corev1.EventTypeWarning, ReasonRollbackFailed, "rollback", errorLine(err))
		return ctrl.Result{RequeueAfter: retryAfter}, r.patchStatus(bound, in.orig, rel)
	}
	msg := held(out)
	r.event(bound, rel, corev1.EventTypeNormal, ReasonRolledBack, "rollback", msg)
	return ctrl.Result{RequeueAfter: d.Interval}, r.patchStatus(bound, in.orig, rel)
}

// chartLabel is NAME VERSION of rec's chart.
func chartLabel(rec *release.Release) string {
	if rec.Chart == nil || rec.Chart.Metadata == nil {
		return "(unknown)"
	}
	return rec.Chart.Metadata.Name + " " + rec.Chart.Metadata.Version
}
