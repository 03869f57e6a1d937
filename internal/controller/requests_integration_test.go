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

// Most API requests the controller may make to install the smallest Release (one ConfigMap), and
// to reconcile it again when there is nothing to do: in the Release's namespace, and on
// cluster-scoped objects as the Release's ServiceAccount. Each object of a chart costs 2 more (a
// dry run, an apply), and a watch when its apply does not answer it ready. The install's
// preflight makes none: the controller's own watches of what it reads show nothing that could
// block (the webhooks other tests make select their own namespaces). The install's bound has
// room over what it makes today (16) for a loaded machine, where an apply may need its watch
// and a write its retry; fewer than minInstallRequests says the count saw nothing.
const (
	minInstallRequests = 5
	maxInstallRequests = 18
	maxNoOpRequests    = 1
	// noOpReconciles is how many reconciles with nothing to do are counted, one after another.
	noOpReconciles = 3
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
		account := "system:serviceaccount:" + env.Namespace + ":deployer"
		for _, ev := range env.ClusterAuditEvents(t, since) {
			if !strings.HasPrefix(ev.UserAgent, "berth-controller/") {
				continue
			}
			if ev.Namespace == "" && ev.User != account {
				continue // another test's: cluster-scoped kinds are shared
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
	if n < minInstallRequests || n > maxInstallRequests {
		t.Errorf("the install made %d requests, want %d to %d: %s", n, minInstallRequests, maxInstallRequests, table)
	}
	for _, read := range []string{"list mutatingwebhookconfigurations", "list validatingwebhookconfigurations", "list apiservices", "get namespaces"} {
		if strings.Contains(table, read+":") {
			t.Errorf("the install's preflight made %q as the account, where the controller's view showed nothing that could block: %s", read, table)
		}
	}

	for i := range noOpReconciles {
		before := reconciles(t)
		mark = env.AuditMark(t)
		patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{"example.com/touched":"%d"}}}`, i)))
		if err := c.Patch(t.Context(), got, patch); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the controller reconciled the annotated Release", func() bool { return reconciles(t) > before })
		n, table = count(mark)
		t.Logf("reconcile %d with nothing to do: %d requests: %s", i+1, n, table)
		if n > maxNoOpRequests {
			t.Errorf("reconcile %d with nothing to do made %d requests, want at most %d: %s", i+1, n, maxNoOpRequests, table)
		}
	}
}
