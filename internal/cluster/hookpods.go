package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
)

var (
	podsResource   = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	eventsResource = schema.GroupVersionResource{Version: "v1", Resource: "events"}
)

// jobControllerUIDLabel is set by the Job controller on every Pod of a Job to the Job's UID.
const jobControllerUIDLabel = "batch.kubernetes.io/controller-uid"

// defaultBackoffLimit is the Job API's default spec.backoffLimit.
const defaultBackoffLimit = 6

func isJob(obj *unstructured.Unstructured) bool {
	return obj.GroupVersionKind().GroupKind() == schema.GroupKind{Group: "batch", Kind: "Job"}
}

func isPod(obj *unstructured.Unstructured) bool {
	return obj.GroupVersionKind().GroupKind() == schema.GroupKind{Kind: "Pod"}
}

// notePods keeps track of the hook's Pods: a Pod hook is its own Pod; the Pods of a Job are read
// whenever its failure count grows, and each newly failed one is reported.
func (f *follower) notePods(ctx context.Context, obj *unstructured.Unstructured, state readiness.State) {
	switch {
	case isPod(obj):
		f.pods[string(obj.GetUID())] = obj
	case isJob(obj):
		failed, _, _ := unstructured.NestedInt64(obj.Object, "status", "failed")
		if int(failed) <= f.failures {
			return
		}
		f.listPods(ctx)
		f.reportFailures(obj, int(failed), state == readiness.Failed)
	}
}

// listPods reads the Pods of a Job hook and merges them into what was seen of them. It returns the
// UIDs of those that exist.
func (f *follower) listPods(ctx context.Context) map[string]bool {
	live := map[string]bool{}
	list, err := f.c.dynamic.Resource(podsResource).Namespace(f.created.GetNamespace()).List(ctx, metav1.ListOptions{
		LabelSelector: jobControllerUIDLabel + "=" + string(f.created.GetUID()),
	})
	if err != nil {
		return live // what was seen before stands
	}
	for i := range list.Items {
		pod := list.Items[i]
		f.pods[string(pod.GetUID())] = &pod
		live[string(pod.GetUID())] = true
	}
	return live
}

// reportFailures tells of each failed Pod not told yet, oldest first; failed is the Job's failure
// count and jobFailed whether the Job has failed for good.
func (f *follower) reportFailures(job *unstructured.Unstructured, failed int, jobFailed bool) {
	limit, found, _ := unstructured.NestedInt64(job.Object, "spec", "backoffLimit")
	if !found {
		limit = defaultBackoffLimit
	}
	tell := func(p PodFailure) {
		f.failures++
		p.Attempt, p.Attempts = f.failures, int(limit)+1
		p.Retried = !jobFailed || p.Attempt < failed
		if f.opts.PodFailed != nil {
			f.opts.PodFailed(p)
		}
	}
	for _, pod := range sortedPods(f.pods) {
		uid := string(pod.GetUID())
		if phase, _, _ := unstructured.NestedString(pod.Object, "status", "phase"); phase != "Failed" || f.reported[uid] {
			continue
		}
		f.reported[uid] = true
		tell(PodFailure{Pod: resource.IdentityOf(pod), Reason: podFailureReason(pod)})
	}
	for f.failures < failed {
		tell(PodFailure{Reason: "the failed Pod was gone before berth could read it"})
	}
}

// sortedPods returns pods oldest first.
func sortedPods(pods map[string]*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(pods))
	for _, p := range pods {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int {
		if c := a.GetCreationTimestamp().Compare(b.GetCreationTimestamp().Time); c != 0 {
			return c
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
	return out
}

// podFailureReason says why a failed Pod failed: the Pod's reason (Evicted, DeadlineExceeded),
// else its first container that ended badly.
func podFailureReason(pod *unstructured.Unstructured) string {
	reason, _, _ := unstructured.NestedString(pod.Object, "status", "reason")
	message, _, _ := unstructured.NestedString(pod.Object, "status", "message")
	if reason != "" {
		return joinNonEmpty(": ", reason, message)
	}
	for _, c := range containerStatuses(pod) {
		if c.exitCode != 0 {
			return fmt.Sprintf("exit code %d (%s)", c.exitCode, c.reason)
		}
	}
	return joinNonEmpty(": ", "failed", message)
}

// containerStatus is the part of a container's status a report shows.
type containerStatus struct {
	name  string
	state string // running, waiting, terminated
	// reason and exitCode of the current state, or of the last termination when running.
	reason, message string
	exitCode        int64
}

func containerStatuses(pod *unstructured.Unstructured) []containerStatus {
	var out []containerStatus
	for _, m := range containerStatusMaps(pod) {
		cs := containerStatus{}
		cs.name, _, _ = unstructured.NestedString(m, "name")
		for _, state := range []string{"terminated", "waiting", "running"} {
			s, found, _ := unstructured.NestedMap(m, "state", state)
			if !found {
				continue
			}
			cs.state = state
			cs.reason, _, _ = unstructured.NestedString(s, "reason")
			cs.message, _, _ = unstructured.NestedString(s, "message")
			cs.exitCode, _, _ = unstructured.NestedInt64(s, "exitCode")
			break
		}
		out = append(out, cs)
	}
	return out
}

// containerStatusMaps returns the status of each of the Pod's init containers, then of each of
// its containers.
func containerStatusMaps(pod *unstructured.Unstructured) []map[string]any {
	var out []map[string]any
	for _, field := range []string{"initContainerStatuses", "containerStatuses"} {
		list, _, _ := unstructured.NestedSlice(pod.Object, "status", field)
		for _, item := range list {
			if m, ok := item.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

func joinNonEmpty(sep string, parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, sep)
}

func (p PodFailure) String() string {
	pod := "a Pod"
	if p.Pod.Name != "" {
		pod = "Pod " + p.Pod.Name
	}
	s := fmt.Sprintf("%s (attempt %d of %d) failed: %s", pod, p.Attempt, p.Attempts, p.Reason)
	if p.Retried {
		return s + "; the Job controller retries it"
	}
	return s + "; the Job has failed"
}
