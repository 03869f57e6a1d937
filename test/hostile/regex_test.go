package hostile_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// regexCostly matches a ConfigMap's value with a pattern of some 300 RE2 instructions, which
// keeps that many threads alive on a string of a and b: within the estimate's limit, but about
// a second of CPU on 256 KiB if it ran.
const regexCostly = "self.data.x.matches('[ab]*a[ab]{300}c')"

// regexLarge spells out a pattern of thousands of RE2 instructions.
const regexLarge = "self.data.x.matches('(a|b){1000}c')"

// TestCELMatchesChargedBeforeItRuns gives six Releases a chart whose ConfigMap holds 256 KiB of
// a and b, with a health check that matches it against regexCostly, and one whose health check
// spells out regexLarge. Each costly match is refused before it runs, so the six fail their
// wait naming the expression and "cost limit exceeded"; the seventh is refused before anything
// is released, naming the pattern and the limit. A bystander is Ready within its baseline, the
// controller grows by at most 64 MiB, and once the Releases are named it spends no CPU.
func TestCELMatchesChargedBeforeItRuns(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	releasetest.Deployer(t, env, "deployer")
	repo := releasetest.ServeCharts(t, berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}-text'}\ndata: {x: '{{ repeat 131072 \"ab\" }}'}\n",
	}))
	p := startController(t, env)
	q := p.quiet(t, env)

	var names []string
	for i := range 6 {
		rel := celRelease(p, env.Namespace, fmt.Sprintf("costly-%d", i), repo, "15s")
		rel.Spec.HealthChecks = []v1alpha1.HealthCheckExpressions{{APIVersion: "v1", Kind: "ConfigMap", Current: regexCostly}}
		names = append(names, rel.Name)
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}
	large := celRelease(p, env.Namespace, "large", repo, "15s")
	large.Spec.HealthChecks = []v1alpha1.HealthCheckExpressions{{APIVersion: "v1", Kind: "ConfigMap", Current: regexLarge}}
	if err := c.Create(t.Context(), large); err != nil {
		t.Fatal(err)
	}
	q.bystander(t)

	_, msg := readyFalse(t, env, "large", controller.ReasonInvalidHealthCheck)
	for _, want := range []string{"healthChecks[0].current", "(a|b){1000}c", "1000 RE2 instructions"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Release large: Ready message %q does not say %q", msg, want)
		}
	}
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "large-text")
	failed := map[string]*v1alpha1.Release{}
	for _, name := range names {
		failed[name] = releasetest.WaitFor(t, c, env.Namespace, name, "fails its wait", celFailed)
	}
	events, err := env.Client.EventsV1().Events(env.Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		status, err := json.Marshal(failed[name].Status)
		if err != nil {
			t.Fatal(err)
		}
		said := string(status)
		for _, e := range events.Items {
			if e.Regarding.Name == name {
				said += "\n" + e.Note
			}
		}
		if want := regexCostly + " (cost limit exceeded)"; !strings.Contains(said, want) {
			t.Errorf("Release %s: neither its status nor its Events say %q:\n%s", name, want, said)
		}
	}
	q.noCPUAfter(t, 10*time.Second)
}
