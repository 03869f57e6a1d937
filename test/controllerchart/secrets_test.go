package controllerchart

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestTemplateWithoutSecretWatch: with watchSecrets=false the controller's role grants no right
// on Secrets (a list of Secrets returns their data) and the controller is told not to watch them;
// ConfigMaps are still watched.
func TestTemplateWithoutSecretWatch(t *testing.T) {
	objs := renderChart(t, "--set", "watchSecrets=false")
	rules := find[rbacv1.ClusterRole](t, objs, "ClusterRole", "", "ctl-berth-controller").Rules
	for _, verb := range []string{"list", "watch", "get"} {
		if allows(rules, need{"", "secrets", verb, ""}) {
			t.Errorf("with watchSecrets=false the controller may %s Secrets", verb)
		}
		if verb != "get" && !allows(rules, need{"", "configmaps", verb, ""}) {
			t.Errorf("with watchSecrets=false the controller may not %s ConfigMaps", verb)
		}
	}
	d := find[appsv1.Deployment](t, objs, "Deployment", "berth-system", "ctl-berth-controller")
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--watch-secrets=false") {
		t.Errorf("the controller's arguments %q lack --watch-secrets=false", args)
	}
}
