package controllerchart

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestTemplateTenantLimits: the controller runs with the chart's maxTimeout, maxIndexSize and recordExpansionLimit, and with none of
// the kubeconfig allowances unless each is set.
func TestTemplateTenantLimits(t *testing.T) {
	allowances := []string{"--allow-kubeconfig-insecure-tls", "--allow-kubeconfig-proxy", "--allow-kubeconfig-http"}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"defaults", nil, []string{"--max-timeout=1h", "--max-index-size=4Mi", "--record-expansion-limit=32Mi"}},
		{"all allowed", []string{"--set", "maxTimeout=30m", "--set", "allowKubeconfig.insecureTLS=true",
			"--set", "allowKubeconfig.proxy=true", "--set", "allowKubeconfig.http=true", "--set", "maxIndexSize=16Mi", "--set", "recordExpansionLimit=64Mi"},
			append([]string{"--max-timeout=30m", "--max-index-size=16Mi", "--record-expansion-limit=64Mi"}, allowances...)},
		{"proxy only", []string{"--set", "allowKubeconfig.proxy=true"}, []string{"--max-timeout=1h", "--allow-kubeconfig-proxy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderChart(t, tc.args...)
			args := find[appsv1.Deployment](t, objs, "Deployment", "berth-system", "ctl-berth-controller").Spec.Template.Spec.Containers[0].Args
			for _, a := range tc.want {
				if !slices.Contains(args, a) {
					t.Errorf("the controller's arguments %q lack %s", args, a)
				}
			}
			for _, a := range allowances {
				if slices.Contains(args, a) && !slices.Contains(tc.want, a) {
					t.Errorf("the controller's arguments %q have %s, which the values do not allow", args, a)
				}
			}
		})
	}
}
