package rollouts

import (
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller/status"
	"github.com/berthdev/berth/internal/waves"
)

// The conditions of a Rollout.
const (
	conditionProgressing = "Progressing"
	conditionHalted      = "Halted"
	conditionRolledBack  = "RolledBack"
	conditionComplete    = "Complete"
	conditionReady       = "Ready"
)

// Reasons of a Rollout's conditions.
const (
	reasonInvalidSpec = "InvalidSpec"
	ReasonComplete    = "Complete"
	ReasonWaveRunning = "WaveProgressing"
	ReasonApproval    = "AwaitingApproval"
	ReasonPausing     = "Pausing"
	ReasonPaused      = "Paused"
	ReasonOlderTarget = "OlderTargetChanging"
	ReasonHalted      = "Halted"
	ReasonRollingBack = "RollingBack"
	ReasonRolledBack  = "RolledBack"
	reasonNotHalted   = "NotHalted"
)

// statusOf is ro's status for plan, made of the plan p and the input in it was decided from, at
// now: each wave and cluster with its state and since when (kept from ro's status while the
// state stays), the revision each cluster had before it was moved, and the conditions.
func statusOf(ro *v1alpha1.Rollout, p *plan, in waves.Input, plan waves.Plan, now time.Time) v1alpha1.RolloutStatus {
	prev := ro.Status
	if prev.Target != p.target {
		prev.Waves, prev.Failure = nil, nil
	}
	keptWaves := map[string]v1alpha1.WaveStatus{}
	keptClusters := map[string]v1alpha1.ClusterStatus{}
	for _, w := range prev.Waves {
		keptWaves[w.Name] = w
		for _, c := range w.Clusters {
			keptClusters[c.Name] = c
		}
	}
	moving := map[waves.Ref]bool{}
	for _, ref := range plan.Move {
		moving[ref] = true
	}
	since := func(was, is string, at *metav1.Time) *metav1.Time {
		if was == is && at != nil {
			return at
		}
		return &metav1.Time{Time: now}
	}
	st := v1alpha1.RolloutStatus{ObservedGeneration: ro.Generation, Target: p.target, Conditions: prev.Conditions}
	ready, total := 0, 0
	for w, wave := range in.Waves {
		ws := v1alpha1.WaveStatus{Name: wave.Name, State: string(plan.Waves[w])}
		ws.Since = since(keptWaves[wave.Name].State, ws.State, keptWaves[wave.Name].Since)
		for i, c := range wave.Clusters {
			state := plan.Clusters[w][i]
			if moving[waves.Ref{Wave: w, Cluster: i}] {
				state = waves.Progressing
			}
			k := keptClusters[c.Name]
			cs := v1alpha1.ClusterStatus{
				Name: c.Name, Release: p.waves[w][i].release, State: string(state),
				Revision: c.Observed.Revision, PreviousRevision: c.PreviousRevision,
			}
			if moving[waves.Ref{Wave: w, Cluster: i}] {
				// The revision it has now is the one a rollback returns to.
				cs.PreviousRevision = c.Observed.Revision
			}
			cs.Since = since(k.State, cs.State, k.Since)
			if state != waves.Ready && state != waves.Pending && c.Observed.Message != "" {
				cs.Message = status.CutMessage(c.Observed.Message, maxMessage)
			}
			ws.Clusters = append(ws.Clusters, cs)
			total++
			if state == waves.Ready {
				ready++
			}
		}
		st.Waves = append(st.Waves, ws)
	}
	st.Summary = fmt.Sprintf("%d/%d", ready, total)
	if plan.Current < len(in.Waves) && plan.Failure == nil {
		st.CurrentWave = in.Waves[plan.Current].Name
	}
	if f := plan.Failure; f != nil {
		st.Failure = failureOf(in, p, f, prev.Failure)
	}
	conditions(ro, &st, in, plan)
	return st
}

// failureOf is the failure f of the status, or kept, the one the status said before.
func failureOf(in waves.Input, p *plan, f *waves.Failure, kept *v1alpha1.RolloutFailure) *v1alpha1.RolloutFailure {
	if f.Wave < 0 || f.Wave >= len(in.Waves) || f.Cluster < 0 || f.Cluster >= len(in.Waves[f.Wave].Clusters) {
		return kept
	}
	return &v1alpha1.RolloutFailure{
		Wave: in.Waves[f.Wave].Name, Cluster: in.Waves[f.Wave].Clusters[f.Cluster].Name, Release: p.waves[f.Wave][f.Cluster].release,
		Reason: f.Reason, Message: status.CutMessage(f.Message, maxMessage),
	}
}

// conditions sets the conditions of st for plan.
func conditions(ro *v1alpha1.Rollout, st *v1alpha1.RolloutStatus, in waves.Input, plan waves.Plan) {
	set := func(t string, is bool, reason, msg string) {
		s := metav1.ConditionFalse
		if is {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: status.CutMessage(msg, 4096), ObservedGeneration: ro.Generation})
	}
	clusters := 0
	for _, w := range in.Waves {
		clusters += len(w.Clusters)
	}
	switch f := st.Failure; {
	case plan.Complete:
		msg := fmt.Sprintf("every cluster is Ready for the target: %d clusters in %d waves", clusters, len(in.Waves))
		set(conditionComplete, true, ReasonComplete, msg)
		set(conditionReady, true, ReasonComplete, msg)
		set(conditionProgressing, false, ReasonComplete, msg)
		set(conditionHalted, false, reasonNotHalted, "no cluster failed")
		set(conditionRolledBack, false, reasonNotHalted, "nothing was rolled back")
		return
	case plan.Failure != nil:
		msg := "a cluster failed"
		if f != nil {
			msg = fmt.Sprintf("cluster %s of wave %s (Release %s) is %s: %s", f.Cluster, f.Wave, f.Release, f.Reason, f.Message)
		}
		set(conditionHalted, true, ReasonHalted, msg+": no further wave starts")
		set(conditionComplete, false, ReasonHalted, msg)
		set(conditionReady, false, ReasonHalted, msg)
		switch {
		case ro.Spec.Remediation == v1alpha1.RemediationHalt:
			set(conditionProgressing, false, ReasonHalted, "halted: the clusters moved stay as they are (remediation Halt); change the template to start again")
			set(conditionRolledBack, false, ReasonHalted, "remediation Halt rolls nothing back")
		case plan.RolledBack:
			set(conditionProgressing, false, ReasonRolledBack, "halted and rolled back: change the template to start again")
			set(conditionRolledBack, true, ReasonRolledBack, "every cluster moved to the target was rolled back to the revision it had before, newest wave first")
		default:
			set(conditionProgressing, true, ReasonRollingBack, "rolling back the clusters moved to the target, newest wave first")
			set(conditionRolledBack, false, ReasonRollingBack, "rolling back")
		}
		return
	}
	set(conditionHalted, false, reasonNotHalted, "no cluster failed")
	set(conditionRolledBack, false, reasonNotHalted, "nothing was rolled back")
	wave := in.Waves[plan.Current].Name
	var reason, msg string
	switch plan.Wait {
	case waves.WaitApproval:
		reason, msg = ReasonApproval, fmt.Sprintf("wave %s waits for approval: berth rollout approve %s (or annotate the Rollout %s=%s)", wave, ro.Name, v1alpha1.ApprovedAnnotation, waves.ApprovalFor(wave, in.Target))
	case waves.WaitPause:
		reason, msg = ReasonPausing, fmt.Sprintf("wave %s starts at %s, once the pause after the wave before it ends", wave, in.Now.Add(plan.After).UTC().Format(time.RFC3339))
	case waves.WaitPaused:
		reason, msg = ReasonPaused, fmt.Sprintf("paused at wave %s: berth rollout resume %s", wave, ro.Name)
	case waves.WaitOlder:
		reason, msg = ReasonOlderTarget, "the template changed: clusters still changing for the one before end first, then the first wave starts"
	default:
		ready := 0
		for _, s := range plan.Clusters[plan.Current] {
			if s == waves.Ready {
				ready++
			}
		}
		reason, msg = ReasonWaveRunning, fmt.Sprintf("wave %s: %d of %d clusters Ready", wave, ready, len(plan.Clusters[plan.Current]))
	}
	set(conditionProgressing, true, reason, msg)
	set(conditionComplete, false, reason, msg)
	set(conditionReady, false, reason, msg)
}

// setCondition sets a condition of ro for its generation.
func setCondition(ro *v1alpha1.Rollout, t string, is metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&ro.Status.Conditions, metav1.Condition{Type: t, Status: is, Reason: reason, Message: status.CutMessage(msg, 4096), ObservedGeneration: ro.Generation})
}

// equalStatus says two statuses say the same.
func equalStatus(a, b v1alpha1.RolloutStatus) bool { return reflect.DeepEqual(a, b) }
