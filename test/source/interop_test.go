package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// TestHelmRepoAddBerthInstall: a repository helm added is berth's too.
func TestHelmRepoAddBerthInstall(t *testing.T) {
	berthtest.UseHelmHome(t)
	env := testenv.New(t)
	r := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{Username: "alice", Password: "s3cret"}, webCharts(t)...)
	berthtest.MustHelmShared(t, "repo", "add", "hcharts", r.URL, "--username", "alice", "--password", "s3cret")

	berthtest.MustBerth(t, env, "install", "web", "hcharts/web", "--version", "1.0.0")
	if got := deployedVersion(t, env, "web", "web"); got != "1.0.0" {
		t.Errorf("deployed chart version %q, want 1.0.0", got)
	}
	if got, want := mustBerth(t, "repo", "list"), berthtest.MustHelmShared(t, "repo", "list"); got != want {
		t.Errorf("berth repo list:\n%s\nhelm repo list:\n%s", got, want)
	}
}

// TestBerthRepoAddHelmSearch: a repository berth added is helm's too, and both search it alike.
func TestBerthRepoAddHelmSearch(t *testing.T) {
	berthtest.UseHelmHome(t)
	r := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, webCharts(t)...)
	mustBerth(t, "repo", "add", "bcharts", r.URL)

	for _, args := range [][]string{
		{"search", "repo", "bcharts/web"},
		{"search", "repo", "web", "--versions", "--devel"},
		{"search", "repo", "--version", "^1.0.0", "-o", "json"},
		{"search", "repo", "db|web", "--regexp", "-o", "yaml"},
		{"search", "repo", "nothing-like-this"},
	} {
		helmOut := berthtest.MustHelmShared(t, args...)
		if got := mustBerth(t, args...); got != helmOut {
			t.Errorf("%s:\nberth printed:\n%s\nhelm printed:\n%s", strings.Join(args, " "), got, helmOut)
		}
	}
	if out := berthtest.MustHelmShared(t, "search", "repo", "bcharts/web"); !strings.Contains(out, "1.1.0") {
		t.Errorf("helm search repo bcharts/web:\n%s\nwant 1.1.0", out)
	}
}

// TestTemplateWithDependenciesMatchesHelm: berth template --dependency-update prints what helm
// template --dependency-update prints, for a chart whose dependency comes from a repository.
func TestTemplateWithDependenciesMatchesHelm(t *testing.T) {
	berthtest.UseHelmHome(t)
	r := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, webCharts(t)...)
	mustBerth(t, "repo", "add", "charts", r.URL)
	app := func() string {
		return berthtest.VersionedChart(t, "app", "0.1.0", map[string]string{
			"Chart.yaml":               "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: db\n  version: ~0.3.0\n  repository: \"@charts\"\n- name: web\n  version: ^1.0.0\n  repository: " + r.URL + "\n",
			"values.yaml":              "db:\n  greeting: from-app\n",
			"templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-{{ .Release.Name }}\ndata:\n  deps: {{ len .Chart.Dependencies | quote }}\n",
		})
	}
	berthDir, helmDir := app(), app()

	got, stderr, err := berthtest.RunBerth(t, "template", "rel", berthDir, "--dependency-update", "-n", "ns")
	if err != nil {
		t.Fatalf("berth template --dependency-update: %v\n%s", err, stderr)
	}
	want := berthtest.MustHelmShared(t, "template", "rel", helmDir, "--dependency-update", "-n", "ns")
	// helm writes the dependency manager's progress to stdout before the manifests; berth
	// writes it to stderr, so its output can be piped.
	if i := strings.Index(want, "---"); i > 0 {
		want = want[i:]
	}
	if got != want {
		t.Errorf("berth template (-helm +berth):\n%s", cmp.Diff(want, got))
	}
	for _, f := range []string{"Chart.lock", "charts/db-0.3.0.tgz", "charts/web-1.1.0.tgz"} {
		if _, err := os.Stat(filepath.Join(berthDir, f)); err != nil {
			t.Errorf("after --dependency-update: %v", err)
		}
	}
	if !strings.Contains(got, "db-rel") || !strings.Contains(got, "web-rel") {
		t.Errorf("berth template did not render the dependencies:\n%s", got)
	}
}
