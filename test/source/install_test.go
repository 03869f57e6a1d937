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
	berthtest.MustBerth(t, env, "install", "good", "charts/web", "--version", "1.0.0")
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
			if _, _, err := berthtest.Berth(t, env, append([]string{"upgrade", "good"}, tt.args...)...); err == nil {
				t.Error("upgrade succeeded")
			}
			if rel := berthtest.LastRecord(t, env, "good"); rel.Version != 1 || rel.Chart.Metadata.Version != "1.0.0" {
				t.Errorf("after a failed upgrade, release good is at revision %d of chart version %s, want 1 of 1.0.0", rel.Version, rel.Chart.Metadata.Version)
			}
			if got := deployedVersion(t, env, "web", "good"); got != "1.0.0" {
				t.Errorf("after a failed upgrade, release good's ConfigMap says version %q, want 1.0.0", got)
			}
			if diff := cmp.Diff(before, home.Files(t)); diff != "" {
				t.Errorf("Helm's files changed (-before +after):\n%s", diff)
			}
		})
	}
}

// TestBadSourceOnAFreshHelmHome: with no Helm files yet, a failed repo add, install or pull
// creates none, not even a directory.
func TestBadSourceOnAFreshHelmHome(t *testing.T) {
	env := testenv.New(t)
	charts := webCharts(t)
	r := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, charts...)
	private := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{Username: "alice", Password: "s3cret"}, charts...)
	tlsRepo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{TLS: true}, charts...)
	if err := os.MkdirAll(filepath.Join(r.Dir, "notrepo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "notrepo", "index.yaml"), []byte("entries: [not an index"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "junk-1.0.0.tgz"), []byte("<html>not a chart</html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"repo add of an unreachable URL", []string{"repo", "add", "x", "http://127.0.0.1:1"}, "nothing was added"},
		{"repo add without credentials", []string{"repo", "add", "x", private.URL}, "--username"},
		{"repo add with wrong credentials", []string{"repo", "add", "x", private.URL, "--username", "alice", "--password", "wrong"}, "--username"},
		{"repo add of a TLS repository without its CA", []string{"repo", "add", "x", tlsRepo.URL}, "--ca-file"},
		{"repo add of a URL without an index", []string{"repo", "add", "x", r.URL + "/nothing"}, "index.yaml"},
		{"repo add of a URL whose index does not parse", []string{"repo", "add", "x", r.URL + "/notrepo"}, "chart repository"},
		{"install of a missing archive", []string{"install", "bad", r.ArchiveURL("web", "9.9.9")}, "check the URL"},
		{"install of an archive that is not a chart", []string{"install", "bad", r.URL + "/junk-1.0.0.tgz"}, "not a chart"},
		{"install --verify of an archive without provenance", []string{"install", "bad", r.ArchiveURL("web", "1.0.0"), "--verify"}, "provenance"},
		{"install over TLS without the CA", []string{"install", "bad", tlsRepo.ArchiveURL("web", "1.0.0")}, "--ca-file"},
		{"pull --verify", []string{"pull", r.ArchiveURL("web", "1.0.0"), "--verify", "-d", dest}, "provenance"},
		{"pull of an archive that is not a chart", []string{"pull", r.URL + "/junk-1.0.0.tgz", "-d", dest, "--untar"}, "not a chart"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := berthtest.UseHelmHome(t)
			_, _, err := berthtest.Berth(t, env, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
			if got := home.Files(t); len(got) != 0 {
				t.Errorf("Helm's files after the failure: %v, want none", got)
			}
			if got := listTree(t, dest); len(got) != 0 {
				t.Errorf("pull's destination after the failure: %v, want nothing", got)
			}
			berthtest.AssertNotRecorded(t, env, "bad")
		})
	}
}

// TestInstallWithDependencyUpdate: install and upgrade --dependency-update fetch what the
// chart declares from the user's repositories before anything is applied.
func TestInstallWithDependencyUpdate(t *testing.T) {
	berthtest.UseHelmHome(t)
	env := testenv.New(t)
	r := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, webCharts(t)...)
	mustBerth(t, "repo", "add", "charts", r.URL)
	app := func(webVersion string) string {
		return berthtest.WriteChart(t, "app", map[string]string{
			"Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: web\n  version: \"" + webVersion + "\"\n  repository: \"@charts\"\n",
		})
	}

	if _, _, err := berthtest.Berth(t, env, "install", "app", app("1.0.0")); err == nil {
		t.Error("install of a chart whose dependencies are missing succeeded")
	}
	berthtest.AssertNotRecorded(t, env, "app")

	berthtest.MustBerth(t, env, "install", "app", app("1.0.0"), "--dependency-update")
	if got := deployedVersion(t, env, "web", "app"); got != "1.0.0" {
		t.Errorf("installed dependency web at %q, want 1.0.0", got)
	}
	berthtest.MustBerth(t, env, "upgrade", "app", app("~1.1"), "--dependency-update")
	if got := deployedVersion(t, env, "web", "app"); got != "1.1.0" {
		t.Errorf("upgraded dependency web to %q, want 1.1.0", got)
	}
}
