package release

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	helmrelease "helm.sh/helm/v4/pkg/release"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
)

// epoch is a fixed time, so records compare without clocks.
var epoch = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// rev returns revision version of a release named name in namespace ns, deployed version minutes
// after epoch.
func rev(ns, name string, version int, status Status) *Release {
	return &Release{
		Name:      name,
		Namespace: ns,
		Version:   version,
		Info: &Info{
			FirstDeployed: epoch,
			LastDeployed:  epoch.Add(time.Duration(version) * time.Minute),
			Status:        status,
			Description:   fmt.Sprintf("revision %d", version),
			Notes:         "Thank you for installing " + name + ".",
		},
		Chart: &chart.Chart{Metadata: &chart.Metadata{
			APIVersion: chart.APIVersionV2, Name: "demo", Version: "1.2.3", AppVersion: "4.5.6",
		}},
		Config:   map[string]any{"replicas": float64(version)},
		Manifest: "---\n# Source: demo/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n",
		Hooks: []*Hook{{
			Name: name + "-hook", Kind: "Job", Path: "demo/templates/hook.yaml",
			Manifest: "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: " + name + "-hook\n",
			Events:   []releasev1.HookEvent{releasev1.HookPostInstall},
		}},
	}
}

// encoded returns the JSON Helm stores for rel, to compare records field by field.
func encoded(t *testing.T, rel *Release) string {
	t.Helper()
	b, err := json.Marshal(rel)
	if err != nil {
		t.Fatalf("encode release %s: %v", rel.Name, err)
	}
	return string(b)
}

// versions returns the revisions of rels in order.
func versions(rels []*Release) []int {
	out := make([]int, 0, len(rels))
	for _, r := range rels {
		out = append(out, r.Version)
	}
	return out
}

// toV1 is a release Helm's driver read, as the store's type.
func toV1(r helmrelease.Releaser) (*Release, error) {
	switch rel := r.(type) {
	case *Release:
		return rel, nil
	case Release:
		return &rel, nil
	}
	return nil, fmt.Errorf("unsupported release type %T", r)
}
