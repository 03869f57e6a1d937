//go:build sharedcharts

package lifecycle

import (
	"regexp"
	"strings"
	"testing"

	"github.com/berthdev/berth/test/berthtest"
)

// randomTestName matches the random suffix podinfo gives the names of its test Pods.
var randomTestName = regexp.MustCompile(`(-test-)[a-z0-9]{5}\b`)

// TestRenderedManifestEqualsHelmTemplate compares berth template with helm template. Both get
// --kube-version: Helm's default capabilities are those of its client-go build, except in test
// binaries, where the Helm SDK uses a fixed v1.20 (testing.Testing()); the version passed is the
// one the helm binary defaults to.
func TestRenderedManifestEqualsHelmTemplate(t *testing.T) {
	t.Parallel()
	kubeVersion, stderr, err := berthtest.RunHelm(t, "version", "--template", "{{.KubeClientVersion}}.0")
	if err != nil {
		t.Fatalf("helm version: %v\n%s", err, stderr)
	}
	tests := []struct {
		chart string
		name  string
		flags []string
	}{
		{chart: "podinfo", name: "defaults"},
		{chart: "podinfo", name: "replicas, hpa, pdb", flags: []string{"--set", "replicaCount=3,hpa.enabled=true", "--set", "podDisruptionBudget.maxUnavailable=1"}},
		{chart: "podinfo", name: "prod values, ingress, redis", flags: []string{"-f", "values-prod.yaml", "--set", "ingress.enabled=true,redis.enabled=true", "--set-string", "podAnnotations.team=web"}},
		{chart: "ingress-nginx", name: "defaults"},
		{chart: "ingress-nginx", name: "daemonset with metrics", flags: []string{"--set", "controller.kind=DaemonSet,controller.metrics.enabled=true"}},
		{chart: "ingress-nginx", name: "hpa values, default backend", flags: []string{"-f", "ci/controller-hpa-values.yaml", "--set", "defaultBackend.enabled=true,controller.replicaCount=3"}},
	}
	for _, tt := range tests {
		t.Run(tt.chart+"/"+tt.name, func(t *testing.T) {
			t.Parallel()
			chart := berthtest.SharedChart(t, tt.chart)
			flags := make([]string, len(tt.flags))
			for i, f := range tt.flags {
				if strings.HasSuffix(f, ".yaml") {
					f = chart + "/" + f
				}
				flags[i] = f
			}
			args := append([]string{"template", "web", chart, "-n", "shop", "--kube-version", kubeVersion}, flags...)
			want, stderr, err := berthtest.RunHelm(t, args...)
			if err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr)
			}
			got, stderr, err := berthtest.RunBerth(t, args...)
			if err != nil {
				t.Fatalf("berth %s: %v\n%s", strings.Join(args, " "), err, stderr)
			}
			want, got = randomTestName.ReplaceAllString(want, "${1}XXXXX"), randomTestName.ReplaceAllString(got, "${1}XXXXX")
			if len(want) < 1000 {
				t.Fatalf("helm template printed only %d bytes:\n%s", len(want), want)
			}
			if got != want {
				t.Errorf("berth %s differs from helm's output:\n%s", strings.Join(args, " "), lineDiff(want, got))
			}
		})
	}
}
