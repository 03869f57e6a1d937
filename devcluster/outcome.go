package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Annotations that set how a simulated Pod ends. See README.md.
const (
	annotationPrefix   = "devcluster.berth.dev/"
	annotationOutcome  = annotationPrefix + "outcome"
	annotationExitCode = annotationPrefix + "exit-code"
	annotationAttempts = annotationPrefix + "attempts"
	// annotationRestartInterval is how long a crash-looping container waits in CrashLoopBackOff
	// before its next restart; stages/pod-crashloop.yaml reads it for its delay.
	annotationRestartInterval = annotationPrefix + "restart-interval"
)

// defaultRestartInterval is annotationRestartInterval's default, the delay of pod-crashloop.yaml.
const defaultRestartInterval = 2 * time.Second

// outcome is how a finishing Pod ends; pod-finish.yaml renders it into the Pod's status, and
// pod-crashloop.yaml into each restart of a crash-looping Pod's containers.
type outcome struct {
	Phase            corev1.PodPhase
	Reason           string // Pod status reason (Evicted)
	Message          string
	ContainerReason  string // terminated container reason
	ConditionReason  string // reason of the Ready=False condition
	ConditionMessage string // message of the Ready=False condition
	ExitCode         int
	Evicted          bool
	// CrashLoop: the containers exit with ExitCode and are restarted in place; the Pod stays
	// Running, each container waiting in CrashLoopBackOff for Backoff before its next restart.
	CrashLoop bool
	Backoff   string
}

func succeeded() outcome {
	return outcome{Phase: corev1.PodSucceeded, ContainerReason: "Completed", ConditionReason: "PodCompleted"}
}

func failed(code int, msg string) outcome {
	return outcome{Phase: corev1.PodFailed, ContainerReason: "Error", ConditionReason: "PodFailed", ExitCode: code, Message: msg}
}

// crashLooping is what a kubelet shows of a Pod whose containers exit with code and are
// restarted after interval, again and again.
func crashLooping(code int, interval time.Duration, containers []string) outcome {
	return outcome{
		Phase:            corev1.PodRunning,
		ContainerReason:  "Error",
		ConditionReason:  "ContainersNotReady",
		ConditionMessage: fmt.Sprintf("containers with unready status: [%s]", strings.Join(containers, " ")),
		ExitCode:         code,
		CrashLoop:        true,
		Backoff:          interval.String(),
	}
}

func evicted() outcome {
	return outcome{
		Phase:           corev1.PodFailed,
		Reason:          "Evicted",
		Message:         "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi.",
		ContainerReason: "Error",
		ConditionReason: "PodFailed",
		ExitCode:        137,
		Evicted:         true,
	}
}

// outcomes computes outcomes; it asks the API server how many earlier Pods of the same Job failed.
type outcomes struct {
	client kubernetes.Interface
}

// compute is called from the pod-finish stage template with the Pod as decoded JSON.
func (o *outcomes) compute(pod map[string]any) (outcome, error) {
	meta := &podMeta{}
	meta.from(pod)
	return o.decide(meta), nil
}

func (o *outcomes) decide(p *podMeta) outcome {
	want := p.annotations[annotationOutcome]
	switch want {
	case "", "succeed":
		return succeeded()
	case "fail", "evict", "crashloop":
	default:
		return failed(2, fmt.Sprintf("devcluster: invalid %s %q: want succeed, fail, evict, crashloop or hang", annotationOutcome, want))
	}
	if s, ok := p.annotations[annotationAttempts]; ok && want != "crashloop" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return failed(2, fmt.Sprintf("devcluster: invalid %s %q: want a whole number", annotationAttempts, s))
		}
		before, err := o.failedBefore(p)
		if err != nil {
			return failed(2, fmt.Sprintf("devcluster: count earlier attempts: %v", err))
		}
		if before >= n {
			return succeeded()
		}
	}
	if want == "evict" {
		return evicted()
	}
	code := 1
	if s, ok := p.annotations[annotationExitCode]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 255 {
			return failed(2, fmt.Sprintf("devcluster: invalid %s %q: want 1 to 255", annotationExitCode, s))
		}
		code = n
	}
	if want == "crashloop" {
		interval := defaultRestartInterval
		if s, ok := p.annotations[annotationRestartInterval]; ok {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				return failed(2, fmt.Sprintf("devcluster: invalid %s %q: want a duration greater than 0", annotationRestartInterval, s))
			}
			interval = d
		}
		return crashLooping(code, interval, p.containers)
	}
	return failed(code, "")
}

// failedBefore counts the other Pods of the same Job that ended in phase Failed. A Pod without
// a Job is always on its first attempt.
func (o *outcomes) failedBefore(p *podMeta) (int, error) {
	if p.jobUID == "" {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods, err := o.client.CoreV1().Pods(p.namespace).List(ctx, metav1.ListOptions{
		LabelSelector: "batch.kubernetes.io/controller-uid=" + p.jobUID,
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, other := range pods.Items {
		if other.Name != p.name && other.Status.Phase == corev1.PodFailed {
			n++
		}
	}
	return n, nil
}

// podMeta is the part of a Pod that outcomes read.
type podMeta struct {
	namespace, name, jobUID string
	annotations             map[string]string
	containers              []string // names of the Pod's containers, in order
}

func (p *podMeta) from(pod map[string]any) {
	m, _ := pod["metadata"].(map[string]any)
	p.namespace, _ = m["namespace"].(string)
	p.name, _ = m["name"].(string)
	p.annotations = map[string]string{}
	if a, ok := m["annotations"].(map[string]any); ok {
		for k, v := range a {
			if s, ok := v.(string); ok {
				p.annotations[k] = s
			}
		}
	}
	spec, _ := pod["spec"].(map[string]any)
	containers, _ := spec["containers"].([]any)
	for _, c := range containers {
		if c, ok := c.(map[string]any); ok {
			if name, ok := c["name"].(string); ok {
				p.containers = append(p.containers, name)
			}
		}
	}
	refs, _ := m["ownerReferences"].([]any)
	for _, r := range refs {
		ref, _ := r.(map[string]any)
		if ref["kind"] == "Job" && ref["controller"] == true {
			p.jobUID, _ = ref["uid"].(string)
		}
	}
}
