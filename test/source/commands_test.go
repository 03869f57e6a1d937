package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/test/berthtest"
)

// TestPullShowAndDependency compares berth's pull, show and dependency commands with helm's on
// the same repository.
func TestPullShowAndDependency(t *testing.T) {
	home := berthtest.UseHelmHome(t)
	r := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, webCharts(t)...)
	mustBerth(t, "repo", "add", "charts", r.URL)

	for _, args := range [][]string{
		{"show", "chart", "charts/web"},
		{"show", "values", "charts/web", "--version", "1.0.0"},
		{"show", "values", "charts/web", "--jsonpath", "{.greeting}"},
		{"show", "readme", "web", "--repo", r.URL},
		{"show", "all", r.ArchiveURL("db", "0.3.0")},
		{"show", "crds", "charts/web", "--devel"},
	} {
		if got, want := mustBerth(t, args...), berthtest.MustHelmShared(t, args...); got != want {
			t.Errorf("%s:\nberth printed:\n%s\nhelm printed:\n%s", strings.Join(args, " "), got, want)
		}
	}

	dest := t.TempDir()
	mustBerth(t, "pull", "charts/web", "--version", "1.0.0", "-d", dest)
	mustBerth(t, "pull", "db", "--repo", r.URL, "-d", dest, "--untar")
	mustBerth(t, "pull", "charts/web", "--devel", "-d", dest, "--untar", "--untardir", "unpacked")
	if got, want := listTree(t, dest), []string{"db/", "db/Chart.yaml", "db/README.md", "db/templates/", "db/templates/cm.yaml", "db/values.yaml",
		"unpacked/", "unpacked/web/", "unpacked/web/Chart.yaml", "unpacked/web/README.md", "unpacked/web/templates/", "unpacked/web/templates/cm.yaml", "unpacked/web/values.yaml",
		"web-1.0.0.tgz"}; !cmp.Equal(got, want) {
		t.Errorf("after pull (-want +got):\n%s", cmp.Diff(want, got))
	}
	if _, _, err := berthtest.RunBerth(t, "pull", "db", "--repo", r.URL, "-d", dest, "--untar"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("pull --untar over an existing directory: %v, want an error saying it exists", err)
	}

	// A failed pull leaves neither the destination nor Helm's files changed.
	before, beforeDest := home.Files(t), listTree(t, dest)
	if _, _, err := berthtest.RunBerth(t, "pull", "charts/web", "--version", "1.0.0", "--verify", "-d", dest); err == nil {
		t.Error("pull --verify of a chart without provenance succeeded")
	}
	if diff := cmp.Diff(beforeDest, listTree(t, dest)); diff != "" {
		t.Errorf("failed pull changed the destination (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before, home.Files(t)); diff != "" {
		t.Errorf("failed pull changed Helm's files (-before +after):\n%s", diff)
	}

	app := berthtest.WriteChart(t, "app", map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: db\n  version: ~0.3.0\n  repository: \"@charts\"\n",
	})
	listBefore := mustBerth(t, "dependency", "list", app)
	if want := berthtest.MustHelmShared(t, "dependency", "list", app); listBefore != want {
		t.Errorf("dependency list:\nberth printed:\n%s\nhelm printed:\n%s", listBefore, want)
	}
	mustBerth(t, "dependency", "update", app)
	if _, err := os.Stat(filepath.Join(app, "charts", "db-0.3.0.tgz")); err != nil {
		t.Errorf("after dependency update: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(app, "charts")); err != nil {
		t.Fatal(err)
	}
	mustBerth(t, "dependency", "build", app)
	if got := mustBerth(t, "dependency", "list", app); !strings.Contains(got, "ok") {
		t.Errorf("dependency list after build:\n%s\nwant the dependency ok", got)
	}
}

// listTree lists the files and directories (with a trailing /) under dir, relative to it.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if info.IsDir() {
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	return out
}
