package main

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func jobPod(name, phase string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"batch.kubernetes.io/controller-uid": "job-uid"}},
		Status:     corev1.PodStatus{Phase: corev1.PodPhase(phase)},
	}
}

func TestDecide(t *testing.T) {
	earlier := fake.NewClientset(jobPod("hook-a", "Failed"), jobPod("hook-b", "Running"))
	tests := []struct {
		name        string
		annotations map[string]string
		jobUID      string
		wantPhase   corev1.PodPhase
		wantReason  string
		wantCode    int
		wantMessage string
	}{
		{name: "default succeeds", wantPhase: corev1.PodSucceeded},
		{name: "explicit succeed", annotations: map[string]string{annotationOutcome: "succeed"}, wantPhase: corev1.PodSucceeded},
		{name: "fail with default code", annotations: map[string]string{annotationOutcome: "fail"}, wantPhase: corev1.PodFailed, wantCode: 1},
		{name: "fail with code", annotations: map[string]string{annotationOutcome: "fail", annotationExitCode: "42"}, wantPhase: corev1.PodFailed, wantCode: 42},
		{name: "evict", annotations: map[string]string{annotationOutcome: "evict"}, wantPhase: corev1.PodFailed, wantReason: "Evicted", wantCode: 137},
		{name: "evict while attempts remain", jobUID: "job-uid", annotations: map[string]string{annotationOutcome: "evict", annotationAttempts: "2"}, wantPhase: corev1.PodFailed, wantReason: "Evicted", wantCode: 137},
		{name: "succeed once attempts are used", jobUID: "job-uid", annotations: map[string]string{annotationOutcome: "fail", annotationAttempts: "1"}, wantPhase: corev1.PodSucceeded},
		{name: "attempts without a job apply to the pod", annotations: map[string]string{annotationOutcome: "fail", annotationAttempts: "1"}, wantPhase: corev1.PodFailed, wantCode: 1},
		{name: "unknown outcome", annotations: map[string]string{annotationOutcome: "explode"}, wantPhase: corev1.PodFailed, wantCode: 2, wantMessage: "invalid devcluster.berth.dev/outcome"},
		{name: "bad exit code", annotations: map[string]string{annotationOutcome: "fail", annotationExitCode: "0"}, wantPhase: corev1.PodFailed, wantCode: 2, wantMessage: "invalid devcluster.berth.dev/exit-code"},
		{name: "bad attempts", annotations: map[string]string{annotationOutcome: "fail", annotationAttempts: "x"}, wantPhase: corev1.PodFailed, wantCode: 2, wantMessage: "invalid devcluster.berth.dev/attempts"},
		{name: "crashloop with default code", annotations: map[string]string{annotationOutcome: "crashloop"}, wantPhase: corev1.PodRunning, wantCode: 1},
		{name: "crashloop with code", annotations: map[string]string{annotationOutcome: "crashloop", annotationExitCode: "3", annotationRestartInterval: "1s"}, wantPhase: corev1.PodRunning, wantCode: 3},
		{name: "crashloop ignores attempts", jobUID: "job-uid", annotations: map[string]string{annotationOutcome: "crashloop", annotationAttempts: "1"}, wantPhase: corev1.PodRunning, wantCode: 1},
		{name: "crashloop with bad exit code", annotations: map[string]string{annotationOutcome: "crashloop", annotationExitCode: "256"}, wantPhase: corev1.PodFailed, wantCode: 2, wantMessage: "invalid devcluster.berth.dev/exit-code"},
		{name: "crashloop with bad interval", annotations: map[string]string{annotationOutcome: "crashloop", annotationRestartInterval: "0s"}, wantPhase: corev1.PodFailed, wantCode: 2, wantMessage: "invalid devcluster.berth.dev/restart-interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &outcomes{client: earlier}
			got := o.decide(&podMeta{namespace: "ns", name: "hook-c", jobUID: tt.jobUID, annotations: tt.annotations})
			if got.Phase != tt.wantPhase || got.Reason != tt.wantReason || got.ExitCode != tt.wantCode {
				t.Errorf("decide = phase %s reason %q code %d, want %s %q %d", got.Phase, got.Reason, got.ExitCode, tt.wantPhase, tt.wantReason, tt.wantCode)
			}
			if !strings.Contains(got.Message, tt.wantMessage) {
				t.Errorf("message %q does not contain %q", got.Message, tt.wantMessage)
			}
			if got.Evicted != (tt.wantReason == "Evicted") {
				t.Errorf("Evicted = %v", got.Evicted)
			}
			if got.CrashLoop != (tt.wantPhase == corev1.PodRunning) {
				t.Errorf("CrashLoop = %v", got.CrashLoop)
			}
		})
	}
}

func TestCrashLoopingOutcome(t *testing.T) {
	got := (&outcomes{}).decide(&podMeta{containers: []string{"web", "sidecar"}, annotations: map[string]string{
		annotationOutcome: "crashloop", annotationExitCode: "3", annotationRestartInterval: "1500ms",
	}})
	want := outcome{
		Phase:            corev1.PodRunning,
		ContainerReason:  "Error",
		ConditionReason:  "ContainersNotReady",
		ConditionMessage: "containers with unready status: [web sidecar]",
		ExitCode:         3,
		CrashLoop:        true,
		Backoff:          "1.5s",
	}
	if got != want {
		t.Errorf("decide = %+v, want %+v", got, want)
	}
	if got := (&outcomes{}).decide(&podMeta{annotations: map[string]string{annotationOutcome: "crashloop"}}); got.Backoff != "2s" {
		t.Errorf("default back-off %q, want 2s", got.Backoff)
	}
}

func TestPodMetaFrom(t *testing.T) {
	var p podMeta
	p.from(map[string]any{"metadata": map[string]any{
		"namespace":   "ns",
		"name":        "hook-x",
		"annotations": map[string]any{annotationOutcome: "fail"},
		"ownerReferences": []any{
			map[string]any{"kind": "Job", "uid": "other", "controller": false},
			map[string]any{"kind": "Job", "uid": "job-uid", "controller": true},
		},
	}, "spec": map[string]any{"containers": []any{
		map[string]any{"name": "main", "image": "x"},
		map[string]any{"name": "sidecar", "image": "y"},
	}}})
	if p.namespace != "ns" || p.name != "hook-x" || p.jobUID != "job-uid" || p.annotations[annotationOutcome] != "fail" ||
		len(p.containers) != 2 || p.containers[0] != "main" || p.containers[1] != "sidecar" {
		t.Errorf("podMeta = %+v", p)
	}
}

func TestFailedBeforeCountsOnlyFailedSiblings(t *testing.T) {
	c := fake.NewClientset(jobPod("a", "Failed"), jobPod("b", "Failed"), jobPod("c", "Succeeded"), jobPod("self", "Failed"))
	n, err := (&outcomes{client: c}).failedBefore(&podMeta{namespace: "ns", name: "self", jobUID: "job-uid"})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("failedBefore = %d, want 2", n)
	}
}
