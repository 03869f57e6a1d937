package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/kwok/pkg/apis/internalversion"
)

func TestLoadStages(t *testing.T) {
	stages, err := loadStages()
	if err != nil {
		t.Fatal(err)
	}
	names := func(ref internalversion.StageResourceRef) map[string]bool {
		m := map[string]bool{}
		for _, s := range stages[ref] {
			m[s.Name] = true
		}
		return m
	}
	pods := names(internalversion.StageResourceRef{APIGroup: "v1", Kind: "Pod"})
	for _, want := range []string{"pod-start", "pod-finish", "pod-crashloop", "pod-delete"} {
		if !pods[want] {
			t.Errorf("pod stage %s missing; have %v", want, pods)
		}
	}
	nodes := names(internalversion.StageResourceRef{APIGroup: "v1", Kind: "Node"})
	if len(nodes) != 2 {
		t.Errorf("node stages = %v, want initialize and heartbeat", nodes)
	}
}

func TestAffinityNode(t *testing.T) {
	nodes := []string{"devcluster-node-1", "devcluster-node-2"}
	withField := func(values ...string) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: values}},
			}}},
		}}}}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"no affinity", &corev1.Pod{}, ""},
		{"daemonset pod", withField("devcluster-node-2"), "devcluster-node-2"},
		{"unknown node", withField("elsewhere"), ""},
	}
	for _, tt := range tests {
		if got := affinityNode(tt.pod, nodes); got != tt.want {
			t.Errorf("%s: affinityNode = %q, want %q", tt.name, got, tt.want)
		}
	}
}
