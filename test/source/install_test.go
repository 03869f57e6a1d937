package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// deployedVersion is the chart version the ConfigMap of release name says it came from.
func deployedVersion(t *testing.T, env *testenv.Env, chart, name string) string {
	t.Helper()
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), chart+"-"+name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read the ConfigMap of release %s: %v", name, err)
	}
	return cm.Data["version"]
}

func TestInstallFromRepository(t *testing.T) {
	home := berthtest.UseHelmHome(t)
	env := testenv.New(t)
	r := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, webCharts(t)...)
	tlsRepo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{TLS: true}, webCharts(t)...)
	mustBerth(t, "repo", "add", "charts", r.URL)

	steps := []struct {
		name, args, chart, want string
	}{
		{"repo/chart --version", "install a charts/web --version 1.0.0", "web", "1.0.0"},
		{"upgrade to a newer version", "upgrade a charts/web --version 1.1.0", "web", "1.1.0"},
		{"latest stable", "install b charts/web", "web", "1.1.0"},
		{"--devel", "install c charts/web --devel", "web", "2.0.0-rc.1"},
		{"version range", "install d charts/web --version ~1.0", "web", "1.0.0"},
		{"--repo URL chart", "install e db --repo " + r.URL, "db", "0.3.0"},
		{"https URL of an archive", "install f " + tlsRepo.ArchiveURL("web", "1.1.0") + " --ca-file " + tlsRepo.CAFile, "web", "1.1.0"},
	}
	for _, s := range steps {
		args := strings.Fields(s.args)
		berthtest.MustBerth(t, env, args...)
		if got := deployedVersion(t, env, s.chart, args[1]); got != s.want {
			t.Errorf("%s: deployed chart version %q, want %q", s.name, got, s.want)
		}
		if got := berthtest.LastRecord(t, env, args[1]).Chart.Metadata.Version; got != s.want {
			t.Errorf("%s: recorded chart version %q, want %q", s.name, got, s.want)
		}
	}
	if _, err := os.Stat(filepath.Join(home.Cache, "repository", "charts-index.yaml")); err != nil {
		t.Errorf("the repository's index is not in the test's Helm cache: %v", err)
	}
}

// TestBadSourceChangesNothing: each bad source stops the install before the cluster is
// contacted for a change, with one line naming the reference and what to do, and leaves
// Helm's files as they were.
func TestBadSourceChangesNothing(t *testing.T) {
	home := berthtest.UseHelmHome(t)
	env := testenv.New(t)
	charts := webCharts(t)
	r := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, charts...)
	private := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{Username: "alice", Password: "s3cret"}, charts...)
	tlsRepo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{TLS: true}, charts...)
	mustBerth(t, "repo", "add", "charts", r.URL)
	// A version published after the last repo update is not in the cached index.
	r.Publish(t, berthtest.VersionedChart(t, "web", "3.0.0", nil))
	notAChart := filepath.Join(r.Dir, "junk-1.0.0.tgz")
	if err := os.WriteFile(notAChart, []byte("<html>not a chart</html>"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		args []string
		want []string // in the error
	}{
		{"unreachable repository", []string{"web", "--repo", "http://127.0.0.1:1"}, []string{"127.0.0.1:1", "unreachable"}},
		{"stale index", []string{"charts/web", "--version", "3.0.0"}, []string{"charts/web", "berth repo update charts"}},
		{"chart not in the cached index", []string{"charts/nosuch"}, []string{"charts/nosuch", "berth repo update charts"}},
		{"missing version", []string{"web", "--repo", r.URL, "--version", "9.9.9"}, []string{"9.9.9", "--version"}},
		{"wrong credentials", []string{"web", "--repo", private.URL, "--username", "alice", "--password", "wrong"}, []string{"unauthorized", "--username"}},
		{"TLS failure", []string{"web", "--repo", tlsRepo.URL}, []string{tlsRepo.URL, "--ca-file"}},
		{"failed provenance check", []string{"charts/web", "--version", "1.0.0", "--verify"}, []string{"charts/web", "provenance"}},
		{"not a chart", []string{r.URL + "/junk-1.0.0.tgz"}, []string{"junk-1.0.0.tgz", "not a chart"}},
		{"no such repository", []string{"nosuch/web"}, []string{"nosuch/web", "berth repo add nosuch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := home.Files(t)
			_, _, err := berthtest.Berth(t, env, append([]string{"install", "bad"}, tt.args...)...)
			if err == nil {
				t.Fatal("install succeeded")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is more than one line:\n%s", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			berthtest.AssertNotRecorded(t, env, "bad")
			berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-bad", "junk-bad")
			if diff := cmp.Diff(before, home.Files(t)); diff != "" {
				t.Errorf("Helm's files changed (-before +after):\n%s", diff)
			}
		})
	}
}
