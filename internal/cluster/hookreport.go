package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/berthdev/berth/internal/resource"
)

// HookReport is what berth can tell of a hook's run: the Job's conditions, the last state of each
// of its Pods, their recent events and logs.
type HookReport struct {
	// Conditions are a Job's conditions that are true: "Failed: BackoffLimitExceeded: ...".
	Conditions []string
	// Pods are the hook's Pods (the hook itself when it is a Pod), oldest first.
	Pods []PodReport
	// Events are the recent events of the hook object and its Pods, oldest first.
	Events []string
	// Logs are the logs of each container, by "pod/container", or why there are none
	// ("not available (...)").
	Logs map[string]string
}

// PodReport is the last state of one Pod.
type PodReport struct {
	Name                   string
	Phase, Reason, Message string
	// Containers says, per container, how it ended or why it waits: "hook: terminated, exit code
	// 1 (Error)".
	Containers []string
	// Gone says the Pod no longer exists: this is the last state berth saw.
	Gone bool
}

// State says the Pod's phase ("phase unknown" when it has none), then its reason and message if
// it has them: "Failed, Evicted: The node was low on resource: memory."
func (p PodReport) State() string {
	phase := p.Phase
	if phase == "" {
		phase = "phase unknown"
	}
	return joinNonEmpty(", ", phase, joinNonEmpty(": ", p.Reason, p.Message))
}

// Log limits: a report shows the end of each container's log.
const (
	logTailLines = 50
	logMaxBytes  = 16 << 10
	maxEvents    = 20
)

// WithPodLogs lets c read the logs of Pods (the dynamic client cannot); without it reports say
// logs are not available. It returns c.
func (c *Client) WithPodLogs(pods corev1client.PodsGetter) *Client {
	c.podLogs = pods
	return c
}

// report reads the current state of the hook's Pods and their events and logs; Pods that are gone
// are reported as last seen.
func (f *follower) report(ctx context.Context) *HookReport {
	live := map[string]bool{}
	switch {
	case isJob(f.created):
		live = f.listPods(ctx)
	case isPod(f.created):
		f.pods[string(f.created.GetUID())] = f.last
		p, err := f.c.dynamic.Resource(podsResource).Namespace(f.created.GetNamespace()).Get(ctx, f.created.GetName(), metav1.GetOptions{})
		if err == nil && p.GetUID() == f.created.GetUID() {
			f.pods[string(p.GetUID())] = p
			live[string(p.GetUID())] = true
		}
	}
	r := &HookReport{Conditions: trueConditions(f.last), Logs: map[string]string{}}
	uids := []types.UID{f.created.GetUID()}
	for _, pod := range sortedPods(f.pods) {
		uids = append(uids, pod.GetUID())
		r.Pods = append(r.Pods, podReport(pod, !live[string(pod.GetUID())]))
		for _, name := range containerNames(pod) {
			r.Logs[pod.GetName()+"/"+name] = f.c.logTail(ctx, pod.GetNamespace(), pod.GetName(), name, false)
		}
	}
	r.Events = f.c.events(ctx, f.created.GetNamespace(), uids)
	return r
}

// trueConditions lists an object's conditions that hold, with their reasons and messages.
func trueConditions(obj *unstructured.Unstructured) []string {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var out []string
	for _, item := range list {
		m, ok := item.(map[string]any)
		// FailureTarget and SuccessCriteriaMet precede Failed and Complete, with the same reason.
		if !ok || m["status"] != "True" || m["type"] == "FailureTarget" || m["type"] == "SuccessCriteriaMet" {
			continue
		}
		out = append(out, joinNonEmpty(": ", fmt.Sprint(m["type"]), str(m["reason"]), str(m["message"])))
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func podReport(pod *unstructured.Unstructured, gone bool) PodReport {
	p := PodReport{Name: pod.GetName(), Gone: gone}
	p.Phase, _, _ = unstructured.NestedString(pod.Object, "status", "phase")
	p.Reason, _, _ = unstructured.NestedString(pod.Object, "status", "reason")
	p.Message, _, _ = unstructured.NestedString(pod.Object, "status", "message")
	for _, c := range containerStatuses(pod) {
		s := c.name + ": " + c.state
		switch c.state {
		case "terminated":
			s += fmt.Sprintf(", exit code %d", c.exitCode)
			if c.reason != "" {
				s += " (" + c.reason + ")"
			}
		case "waiting":
			if c.reason != "" {
				s += ": " + c.reason
			}
		}
		if c.message != "" {
			s += ": " + c.message
		}
		p.Containers = append(p.Containers, s)
	}
	return p
}

func containerNames(pod *unstructured.Unstructured) []string {
	var out []string
	for _, field := range []string{"initContainers", "containers"} {
		list, _, _ := unstructured.NestedSlice(pod.Object, "spec", field)
		for _, item := range list {
			if m, ok := item.(map[string]any); ok {
				out = append(out, str(m["name"]))
			}
		}
	}
	return out
}

// logTail says the end of a container's log (of its previous instance with previous: the one
// that ended before its last restart), "empty", or why it is not available: "not available
// (...)".
func (c *Client) logTail(ctx context.Context, namespace, pod, container string, previous bool) string {
	text, err := c.logs(ctx, namespace, pod, container, previous)
	switch {
	case err != nil:
		return fmt.Sprintf("not available (%v)", err)
	case strings.TrimSpace(text) == "":
		return "empty"
	default:
		return text
	}
}

// logs reads the end of a container's log, or of its previous instance with previous.
func (c *Client) logs(ctx context.Context, namespace, pod, container string, previous bool) (string, error) {
	if c.podLogs == nil {
		return "", fmt.Errorf("berth has no client for Pod logs")
	}
	tail, limit := int64(logTailLines), int64(logMaxBytes)
	stream, err := c.podLogs.Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{
		Container: container, TailLines: &tail, LimitBytes: &limit, Previous: previous,
	}).Stream(ctx)
	if err != nil {
		return "", err
	}
	defer stream.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, stream); err != nil {
		return b.String(), err
	}
	return b.String(), nil
}

// events lists the most recent events of the objects with the given UIDs, oldest first.
func (c *Client) events(ctx context.Context, namespace string, uids []types.UID) []string {
	type event struct {
		at   metav1.Time
		text string
	}
	var all []event
	for _, uid := range uids {
		list, err := c.dynamic.Resource(eventsResource).Namespace(namespace).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(uid)).String(),
		})
		if err != nil {
			continue
		}
		for _, item := range list.Items {
			var e corev1.Event
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &e); err != nil {
				continue
			}
			at := e.LastTimestamp
			if at.IsZero() {
				at = metav1.NewTime(e.EventTime.Time)
			}
			obj := resource.Identity{Kind: e.InvolvedObject.Kind, Namespace: e.InvolvedObject.Namespace, Name: e.InvolvedObject.Name}
			if gv := strings.Split(e.InvolvedObject.APIVersion, "/"); len(gv) == 2 {
				obj.Group = gv[0]
			}
			count := max(e.Count, 1)
			all = append(all, event{at: at, text: fmt.Sprintf("%s: %s %s: %s (x%d)", obj, e.Type, e.Reason, strings.TrimSpace(e.Message), count)})
		}
	}
	slices.SortStableFunc(all, func(a, b event) int { return a.at.Compare(b.at.Time) })
	if len(all) > maxEvents {
		all = all[len(all)-maxEvents:]
	}
	out := make([]string, len(all))
	for i, e := range all {
		out[i] = e.text
	}
	return out
}
