package controller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
)

func TestDependencyCycle(t *testing.T) {
	tests := []struct {
		name  string
		from  string
		graph map[string][]string
		want  []string
	}{
		{name: "none", from: "app", graph: map[string][]string{"app": {"db", "cache"}, "db": {"volume"}}},
		{name: "itself", from: "app", graph: map[string][]string{"app": {"app"}}, want: []string{"app", "app"}},
		{name: "two", from: "a", graph: map[string][]string{"a": {"b"}, "b": {"a"}}, want: []string{"a", "b", "a"}},
		{name: "through a third", from: "a", graph: map[string][]string{"a": {"x", "b"}, "b": {"c"}, "c": {"a"}},
			want: []string{"a", "b", "c", "a"}},
		// A cycle among its dependencies that does not lead back is theirs to report.
		{name: "below it", from: "app", graph: map[string][]string{"app": {"db"}, "db": {"cache"}, "cache": {"db"}}},
		{name: "diamond", from: "app", graph: map[string][]string{"app": {"db", "cache"}, "db": {"volume"}, "cache": {"volume"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, dependencyCycle(tt.from, tt.graph)); diff != "" {
				t.Errorf("cycle (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReaches(t *testing.T) {
	g := map[string][]string{"app": {"db"}, "db": {"volume"}, "a": {"b"}, "b": {"a"}}
	tests := []struct {
		from, to string
		want     bool
	}{
		{"app", "db", true},
		{"app", "volume", true},
		{"db", "app", false},
		{"a", "b", true},
		{"b", "a", true},
		{"volume", "app", false},
	}
	for _, tt := range tests {
		if got := reaches(tt.from, tt.to, g); got != tt.want {
			t.Errorf("reaches(%s, %s) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestNotReady(t *testing.T) {
	ready := func(mod func(*v1alpha1.Release)) *v1alpha1.Release {
		rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "db", Generation: 2}}
		rel.Status.ObservedGeneration = 2
		rel.Status.Conditions = []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonInstallSucceeded}}
		if mod != nil {
			mod(rel)
		}
		return rel
	}
	now := metav1.Now()
	tests := []struct {
		name string
		rel  *v1alpha1.Release
		want string
	}{
		{"ready", ready(nil), ""},
		{"missing", nil, "does not exist"},
		{"being deleted", ready(func(r *v1alpha1.Release) { r.DeletionTimestamp = &now }), "is being deleted"},
		{"spec changed", ready(func(r *v1alpha1.Release) { r.Generation = 3 }), "generation 3 not reconciled yet"},
		{"failed", ready(func(r *v1alpha1.Release) {
			r.Status.Conditions[0].Status, r.Status.Conditions[0].Reason = metav1.ConditionFalse, ReasonInstallFailed
		}), "Ready=False, InstallFailed"},
		{"no condition", ready(func(r *v1alpha1.Release) { r.Status.Conditions = nil }), "not reconciled yet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := notReady(tt.rel); got != tt.want {
				t.Errorf("notReady = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUninstallBackoff(t *testing.T) {
	failed := v1alpha1.OperationRecord{Operation: "uninstall", Outcome: "Failed"}
	blocked := v1alpha1.OperationRecord{Operation: "uninstall", Outcome: "Blocked"}
	installed := v1alpha1.OperationRecord{Operation: "install", Outcome: "Failed"}
	tests := []struct {
		name    string
		history []v1alpha1.OperationRecord
		want    time.Duration
	}{
		{"first failure", []v1alpha1.OperationRecord{failed, installed}, 30 * time.Second},
		{"second", []v1alpha1.OperationRecord{failed, blocked, installed}, time.Minute},
		{"fourth", []v1alpha1.OperationRecord{failed, failed, failed, failed}, 4 * time.Minute},
		{"bounded", []v1alpha1.OperationRecord{failed, failed, failed, failed, failed}, 5 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := uninstallBackoff(tt.history); got != tt.want {
				t.Errorf("backoff %s, want %s", got, tt.want)
			}
		})
	}
}
