package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/engine"
)

// stepReporter returns an engine event handler that writes each step and hook an operation
// starts to rel's status.currentStep. Steps run concurrently: one write at a time.
func (r *Reconciler) stepReporter(ctx context.Context, rel *v1alpha1.Release) func(engine.Event) {
	var mu sync.Mutex
	return func(e engine.Event) {
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
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"currentStep": firstLine(step)}})
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
