package hostile_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/yamlbound"
)

// TestAliasesValuesFromRefusedByName: a values document of 508 KiB in a ConfigMap named by
// valuesFrom, a string of 500 KiB and 2,000 aliases of it (a gigabyte once expanded), is refused
// by the ConfigMap's name and key and the limit before anything expands it; the controller stays
// within its memory bound, and another namespace's Release becomes Ready meanwhile.
func TestAliasesValuesFromRefusedByName(t *testing.T) {
	repoURL := sizesWebChart(t)
	env, c, p, q := attacked(t)

	secret := "hunter2-" + strings.Repeat("x", 500<<10)
	doc := "big: &big " + secret + "\nmany:\n" + strings.Repeat("- *big\n", 2000)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bomb", Namespace: env.Namespace}, Data: map[string]string{"values.yaml": doc}}
	if err := c.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	rel := sizesRelease(p, env.Namespace, "aliases", repoURL, "  valuesFrom: [{kind: ConfigMap, name: bomb, key: values.yaml}]\n")
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	q.bystander(t)

	cond := sizesNotReady(t, c, env.Namespace, "aliases")
	for _, want := range []string{"ConfigMap/" + env.Namespace + "/bomb key values.yaml", fmt.Sprint(yamlbound.Tenant.Bytes)} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("Release aliases: %q does not say %q", cond.Message, want)
		}
	}
	if cond.Reason != controller.ReasonInvalidValues || strings.Contains(cond.Message, "hunter2") {
		t.Errorf("Release aliases: %s %q, want %s quoting nothing of the document", cond.Reason, cond.Message, controller.ReasonInvalidValues)
	}
}
