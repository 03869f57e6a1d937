// Package readiness decides whether an object, as the API server returned it, is ready, still
// progressing, or has failed. It does no I/O: trackers call Compute on every change they see.
//
// The rules are, first, what the object says of itself: the expressions of its
// helm.sh/readiness-success and helm.sh/readiness-failure annotations (HIP-0025's custom
// readiness); then the health checks given for its kind (a Release's spec.healthChecks, in CEL);
// then the built-in rules. These are kstatus's (github.com/fluxcd/cli-utils/pkg/kstatus), with
// berth's own where kstatus does not fit a release: a failed Pod is Failed (kstatus calls it
// Current), a Job is ready at once unless jobs are waited for, and then only when it completed,
// and an Argo Rollout is ready when it is Healthy.
package readiness

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// State is where an object stands.
type State string

const (
	Ready      State = "Ready"
	InProgress State = "InProgress"
	Failed     State = "Failed"
)

// Result says where an object stands and, when it is not ready, why.
type Result struct {
	State   State
	Message string
	// Expression is the custom expression that decided State, as written: an expression of a
	// readiness annotation, or a health check's; empty when a built-in rule decided.
	Expression string
}

// Options change the rules.
type Options struct {
	// WaitForJobs makes a Job ready only once it completed (Helm's --wait-for-jobs).
	WaitForJobs bool
	// Checks are the health checks of kinds, used for the objects whose readiness annotations
	// do not decide; nil: none.
	Checks *Checks
}

// Compute returns the readiness of obj: by its readiness annotations, else by the health
// check of its kind, else by the built-in rules.
func Compute(obj *unstructured.Unstructured, opts Options) Result {
	if r, ok := annotated(obj); ok {
		return r
	}
	if r, ok := opts.Checks.evaluate(obj); ok {
		return r
	}
	return Builtin(obj, opts)
}

// Builtin returns the readiness of obj by the built-in rules alone, whatever it is annotated
// with: a hook's outcome is judged so (HIP-0025 leaves hooks alone).
func Builtin(obj *unstructured.Unstructured, opts Options) Result {
	switch obj.GroupVersionKind().GroupKind().String() {
	case "Job.batch":
		if !opts.WaitForJobs {
			return Result{State: Ready, Message: "Job is not waited for"}
		}
		return job(obj)
	case "Pod":
		return pod(obj)
	case "Rollout.argoproj.io":
		return rollout(obj)
	case "Release.berth.dev":
		return berthRelease(obj)
	}
	res, err := status.Compute(obj)
	if err != nil {
		return Result{State: InProgress, Message: fmt.Sprintf("status unreadable: %v", err)}
	}
	if res.Message == "" {
		res.Message = "kstatus: " + string(res.Status)
	}
	switch res.Status {
	case status.CurrentStatus:
		return Result{State: Ready, Message: res.Message}
	case status.FailedStatus:
		return Result{State: Failed, Message: res.Message}
	default:
		return Result{State: InProgress, Message: res.Message}
	}
}

func job(obj *unstructured.Unstructured) Result {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["status"] != "True" {
			continue
		}
		msg, _ := m["message"].(string)
		switch m["type"] {
		case "Complete":
			return Result{State: Ready, Message: "Job completed"}
		case "Failed":
			reason, _ := m["reason"].(string)
			return Result{State: Failed, Message: fmt.Sprintf("Job failed: %s: %s", reason, msg)}
		}
	}
	active, _, _ := unstructured.NestedInt64(obj.Object, "status", "active")
	failed, _, _ := unstructured.NestedInt64(obj.Object, "status", "failed")
	return Result{State: InProgress, Message: fmt.Sprintf("Job running: %d active, %d failed", active, failed)}
}

func pod(obj *unstructured.Unstructured) Result {
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	switch phase {
	case "Succeeded":
		return Result{State: Ready, Message: "Pod succeeded"}
	case "Failed":
		reason, _, _ := unstructured.NestedString(obj.Object, "status", "reason")
		msg, _, _ := unstructured.NestedString(obj.Object, "status", "message")
		return Result{State: Failed, Message: fmt.Sprintf("Pod failed: %s %s", reason, msg)}
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" && m["status"] == "True" {
			return Result{State: Ready, Message: "Pod is ready"}
		}
	}
	return Result{State: InProgress, Message: fmt.Sprintf("Pod is %s and not ready", phaseOr(phase))}
}

func phaseOr(p string) string {
	if p == "" {
		return "Pending"
	}
	return p
}

// rollout is an Argo Rollout's readiness: ready when Healthy (kstatus would wait for conditions
// a Rollout does not set as it expects), failed when Degraded, in progress otherwise (Progressing,
// Paused, or no phase yet), and in progress while its controller has not seen its generation.
func rollout(obj *unstructured.Unstructured) Result {
	if gen, ok := unobserved(obj); ok {
		return Result{State: InProgress, Message: fmt.Sprintf("Rollout generation %d not observed yet", gen)}
	}
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	msg, _, _ := unstructured.NestedString(obj.Object, "status", "message")
	switch phase {
	case "Healthy":
		return Result{State: Ready, Message: "Rollout is Healthy"}
	case "Degraded":
		return Result{State: Failed, Message: strings.TrimSuffix("Rollout is Degraded: "+msg, ": ")}
	case "":
		return Result{State: InProgress, Message: "Rollout has no phase yet"}
	}
	return Result{State: InProgress, Message: strings.TrimSuffix(fmt.Sprintf("Rollout is %s: %s", phase, msg), ": ")}
}

// berthRelease is the readiness of a Release of berth controller: ready when its Ready condition
// is True for its generation, failed when Stalled is (it is not tried again until its spec
// changes), in progress otherwise: before the controller wrote any status (kstatus would take an
// object with no status as current), and while it works on the generation. A chart that holds
// Releases is thus waited for until the releases they make are.
func berthRelease(obj *unstructured.Unstructured) Result {
	gen := obj.GetGeneration()
	if _, ok := unobserved(obj); ok {
		return Result{State: InProgress, Message: fmt.Sprintf("Release generation %d not reconciled yet", gen)}
	}
	var ready, stalled map[string]any
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		switch m["type"] {
		case "Ready":
			ready = m
		case "Stalled":
			stalled = m
		}
	}
	current := func(m map[string]any) bool {
		if m == nil || m["status"] != "True" {
			return false
		}
		observed, ok := m["observedGeneration"].(int64)
		if f, isFloat := m["observedGeneration"].(float64); isFloat {
			observed, ok = int64(f), true
		}
		return !ok || gen == 0 || observed == gen
	}
	say := func(m map[string]any) string {
		reason, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		return strings.TrimSuffix(reason+": "+msg, ": ")
	}
	switch {
	case current(stalled):
		return Result{State: Failed, Message: "Release is Stalled: " + say(stalled)}
	case current(ready):
		return Result{State: Ready, Message: "Release is Ready: " + say(ready)}
	case ready == nil:
		return Result{State: InProgress, Message: "Release not reconciled yet"}
	}
	return Result{State: InProgress, Message: "Release is not Ready: " + say(ready)}
}

// unobserved returns obj's generation when its status says which generation its controller
// observed (status.observedGeneration, a number or, as Argo Rollouts writes it, a string) and
// that is not it.
func unobserved(obj *unstructured.Unstructured) (int64, bool) {
	observed, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "observedGeneration")
	gen := obj.GetGeneration()
	if !found || gen == 0 {
		return 0, false
	}
	switch o := observed.(type) {
	case int64:
		return gen, o != gen
	case float64:
		return gen, o != float64(gen)
	case string:
		// Argo Rollouts before v0.10 wrote a hash of the spec here: nothing to compare.
		if n, err := strconv.ParseInt(o, 10, 64); err == nil {
			return gen, n != gen
		}
	}
	return 0, false
}
