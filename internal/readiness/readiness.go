// Package readiness decides whether an object, as the API server returned it, is ready, still
// progressing, or has failed. It does no I/O: trackers call Compute on every change they see.
//
// The rules are kstatus's (github.com/fluxcd/cli-utils/pkg/kstatus), with berth's own where
// kstatus does not fit a release: a failed Pod is Failed (kstatus calls it Current), a Job is ready
// at once unless jobs are waited for, and then only when it completed.
package readiness

import (
	"fmt"

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
}

// Options change the rules.
type Options struct {
	// WaitForJobs makes a Job ready only once it completed (Helm's --wait-for-jobs).
	WaitForJobs bool
}

// Compute returns the readiness of obj.
func Compute(obj *unstructured.Unstructured, opts Options) Result {
	switch obj.GroupVersionKind().GroupKind().String() {
	case "Job.batch":
		if !opts.WaitForJobs {
			return Result{State: Ready, Message: "Job is not waited for"}
		}
		return job(obj)
	case "Pod":
		return pod(obj)
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
