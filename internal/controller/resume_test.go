package controller

import (
	"errors"
	"testing"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/release"
)

func TestReleasedUnsaid(t *testing.T) {
	record := &release.Release{Chart: &chartv2.Chart{Metadata: &chartv2.Metadata{Version: "1.0.0"}}, Config: map[string]any{"replicas": float64(2)}}
	d := &desired{Values: map[string]any{"replicas": float64(2)}, ValuesDigest: "sha256:two"}
	interrupted := func(mod func(*v1alpha1.Release)) *v1alpha1.Release {
		rel := &v1alpha1.Release{}
		rel.Generation = 3
		rel.Status = v1alpha1.ReleaseStatus{
			Revision: 1, LastAttemptedGeneration: 3, LastAttemptedChartVersion: "1.0.0", LastAttemptedValuesDigest: "sha256:two",
		}
		markReconciling(rel, "upgrade")
		if mod != nil {
			mod(rel)
		}
		return rel
	}
	deployed := &recorded{Exists: true, Deployed: true, Version: 2, Record: record}
	tests := []struct {
		name string
		rel  *v1alpha1.Release
		last *recorded
		want bool
	}{
		{"released, status not written", interrupted(nil), deployed, true},
		{"the status says so", interrupted(func(r *v1alpha1.Release) { r.Status.Revision = 2 }), deployed, false},
		{"not attempted: adopting a release", interrupted(func(r *v1alpha1.Release) { r.Status.LastAttemptedGeneration = 0 }), deployed, false},
		{"the attempt ended", interrupted(func(r *v1alpha1.Release) { markFailed(r, ReasonFailed, errors.New("x"), true) }), deployed, false},
		{"the spec changed since", interrupted(func(r *v1alpha1.Release) { r.Generation = 4 }), deployed, false},
		{"still pending", interrupted(nil), &recorded{Exists: true, Version: 2, Record: record}, false},
		{"other values recorded", interrupted(nil), &recorded{Exists: true, Deployed: true, Version: 2,
			Record: &release.Release{Chart: record.Chart, Config: map[string]any{"replicas": float64(1)}}}, false},
		{"no record", interrupted(nil), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := releasedUnsaid(tt.rel, tt.last, "1.0.0", d); got != tt.want {
				t.Errorf("releasedUnsaid = %v, want %v", got, tt.want)
			}
		})
	}
}
