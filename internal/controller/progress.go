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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/engine"
)

// stepReporter returns an engine event handler that writes each step and hook an operation
// starts to rel's status.currentStep. Steps run concurrently: one write at a time.
func (r *Reconciler) stepReporter(ctx context.Context, rel *v1alpha1.Release) func(engine.Event) {
	return r.operationReporter(ctx, rel, 0)
}

// operationReporter is stepReporter for an install or upgrade whose watch window lasts window
// (0: none): when the window's step starts, the Reconciling and Ready conditions say too that the
// release is Ready and watched (watchingMessage).
func (r *Reconciler) operationReporter(ctx context.Context, rel *v1alpha1.Release, window time.Duration) func(engine.Event) {
	var mu sync.Mutex
	// The conditions as the operation's start wrote them, which a window's report rewrites.
	conditions := slices.Clone(rel.Status.Conditions)
	generation := rel.Generation
	return func(e engine.Event) {
		var step string
		status := map[string]any{}
		switch e.Type {
		case engine.StepStarted:
			if strings.HasPrefix(e.Step, "record/") {
				return // a write of the release's record: quick, and not worth a write of its own
			}
			step = e.Step
			if e.Message != "" {
				step += ": " + e.Message
			}
			if revision, ok := watchStep(e.Step); ok {
				status["conditions"] = watchingConditions(conditions, generation, watchingMessage(revision, window))
			}
		case engine.HookStarted:
			step = fmt.Sprintf("%s hook %s", e.Step, e.Object)
		default:
			return
		}
		status["currentStep"] = firstLine(step)
		patch, err := json.Marshal(map[string]any{"status": status})
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		target := &v1alpha1.Release{}
		target.Namespace, target.Name = rel.Namespace, rel.Name
		if err := r.Client.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil {
			log.FromContext(ctx).Error(err, "report the current step")
		}
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

// watchingMessage says that revision is Ready and watched for window (0: as long as its window
// lasts, which a resumed operation does not know).
func watchingMessage(revision int, window time.Duration) string {
	if window <= 0 {
		return fmt.Sprintf("revision %d is Ready; watching its objects until its watch window ends", revision)
	}
	return fmt.Sprintf("revision %d is Ready; watching its objects for %s", revision, window)
}

// watchingConditions are conditions with Reconciling and Ready saying msg, as markReconciling
// says them, for generation: the whole list, as a merge patch replaces it.
func watchingConditions(conditions []metav1.Condition, generation int64, msg string) []metav1.Condition {
	out := slices.Clone(conditions)
	for _, t := range []string{ConditionReconciling, ConditionReady} {
		status := metav1.ConditionTrue
		if t == ConditionReady {
			status = metav1.ConditionUnknown
		}
		meta.SetStatusCondition(&out, metav1.Condition{Type: t, Status: status, Reason: ReasonProgressing, Message: msg, ObservedGeneration: generation})
	}
	return out
}
