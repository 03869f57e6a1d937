package hostile_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestRenderBudget (H5): a template that builds a string of a gigabyte, and one that loops ten
// billion times, are each stopped at their render's budget and named (RenderBudgetExceeded, with
// the limit); the controller grows no more than its bound, spends no CPU once they are named, and
// another namespace's Release is Ready on time.
func TestRenderBudget(t *testing.T) {
	repo := releasetest.ServeCharts(t,
		berthtest.PackageNewChart(t, "huge", "0.1.0", map[string]string{
			"templates/huge.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: huge}\ndata: {x: \"{{ repeat 1073741824 \"x\" }}\"}\n",
		}),
		berthtest.PackageNewChart(t, "loops", "0.1.0", map[string]string{
			"templates/loops.yaml": "{{- range until 100000 }}{{- range until 100000 }}{{- end }}{{- end }}\n",
		}))
	env, c, p, q := attacked(t, "--render-cpu", "2s")
	for _, name := range []string{"huge", "loops"} {
		rel := p.release(env.Namespace, name, `
  serviceAccountName: deployer
  timeout: 30s
  chart: {repository: "`+repo+`", name: `+name+`, version: "0.1.0"}`)
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}
	q.bystander(t)
	// The loops allocate a list of 100,000 at each turn of the outer one: whichever of the CPU
	// time and the memory its garbage takes runs out first stops it.
	for name, limits := range map[string][]string{"huge": {"memory limit"}, "loops": {"cpu limit", "memory limit"}} {
		cond := sizesNotReady(t, c, env.Namespace, name)
		named := slices.ContainsFunc(limits, func(l string) bool { return strings.Contains(cond.Message, l) })
		if cond.Reason != controller.ReasonRenderBudgetExceeded || !named || !strings.Contains(cond.Message, "chart "+name) {
			t.Errorf("Release %s: %s %q, want %s naming chart %s and its %s", name, cond.Reason, cond.Message, controller.ReasonRenderBudgetExceeded, name, strings.Join(limits, " or "))
		}
	}
	q.noCPUAfter(t, 5*time.Second)
}
