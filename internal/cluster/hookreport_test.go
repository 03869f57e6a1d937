package cluster_test

import (
	"testing"

	"github.com/berthdev/berth/internal/cluster"
)

// TestPodReportState says a Pod's phase, then the reason and message it has.
func TestPodReportState(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pod  cluster.PodReport
		want string
	}{
		{cluster.PodReport{}, "phase unknown"},
		{cluster.PodReport{Phase: "Running"}, "Running"},
		{cluster.PodReport{Phase: "Failed", Reason: "Evicted", Message: "low on memory"}, "Failed, Evicted: low on memory"},
		{cluster.PodReport{Phase: "Failed", Message: "low on memory"}, "Failed, low on memory"},
		{cluster.PodReport{Reason: "Evicted"}, "phase unknown, Evicted"},
	}
	for _, tt := range tests {
		if got := tt.pod.State(); got != tt.want {
			t.Errorf("%+v.State() = %q, want %q", tt.pod, got, tt.want)
		}
	}
}
