package controller_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/releasetest"
)

// Most API requests the controller may make in a Release's namespace to install the smallest
// Release (one ConfigMap), and to reconcile it again when there is nothing to do. Each object
// of a chart costs 2 more (a dry run, an apply), and a watch when its apply does not answer it
// ready.
const (
	maxInstallRequests = 15
	maxNoOpRequests    = 1
)

// TestReleaseRequestCount pins how many requests the controller makes, from the API server's
// audit log: those of its user agent (berth-controller/VERSION) in the Release's namespace, but
// for its informer's list and watch of Releases (discovery, shared by the
// reconciles of a cluster, is asked at most once a discovery age and is not counted).
func TestReleaseRequestCount(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	repo := releasetest.ServeCharts(t, webChart(t))

	count := func(since testenv.AuditMark) (int, string) {
		byRequest := map[string]int{}
		n := 0
		for _, ev := range env.AuditEvents(t, since) {
			if !strings.HasPrefix(ev.UserAgent, "berth-controller/") {
				continue
			}
			if ev.Resource == "releases" && ev.Subresource == "" && (ev.Verb == "list" || ev.Verb == "watch") {
				continue // the manager's informer
			}
			s := ev.Verb + " " + ev.Resource
			if ev.Subresource != "" {
				s += "/" + ev.Subresource
			}
			if ev.DryRun {
				s += " (dry run)"
			}
			byRequest[s]++
			n++
		}
		var lines []string
		for _, k := range slices.Sorted(maps.Keys(byRequest)) {
			lines = append(lines, fmt.Sprintf("%s: %d", k, byRequest[k]))
		}
		return n, strings.Join(lines, ", ")
	}

	mark := env.AuditMark(t)
	env.Apply(t, smallestReleaseYAML(env.Namespace, repo, "deployer"))
	got := waitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))
	n, table := count(mark)
	t.Logf("install: %d requests: %s", n, table)
	if n > maxInstallRequests {
		t.Errorf("the install made %d requests, want at most %d: %s", n, maxInstallRequests, table)
	}

	before := reconciles(t)
	mark = env.AuditMark(t)
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"example.com/touched":"1"}}}`))
	if err := c.Patch(t.Context(), got, patch); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the controller reconciled the annotated Release", func() bool { return reconciles(t) > before })
	n, table = count(mark)
	t.Logf("reconcile with nothing to do: %d requests: %s", n, table)
	if n > maxNoOpRequests {
		t.Errorf("a reconcile with nothing to do made %d requests, want at most %d: %s", n, maxNoOpRequests, table)
	}
}
