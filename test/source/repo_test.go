package source

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/test/berthtest"
)

// webCharts are versions of a chart "web" (and one of "db"): stable ones and a pre-release.
func webCharts(t *testing.T) []string {
	t.Helper()
	cm := func(name string) map[string]string {
		return map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "-{{ .Release.Name }}\ndata:\n  version: {{ .Chart.Version | quote }}\n",
			"values.yaml": "greeting: hello\n", "README.md": "# " + name + "\n"}
	}
	return []string{
		berthtest.VersionedChart(t, "web", "1.0.0", cm("web")),
		berthtest.VersionedChart(t, "web", "1.1.0", cm("web")),
		berthtest.VersionedChart(t, "web", "2.0.0-rc.1", cm("web")),
		berthtest.VersionedChart(t, "db", "0.3.0", cm("db")),
	}
}

func mustBerth(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := berthtest.RunBerth(t, args...)
	if err != nil {
		t.Fatalf("berth %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout
}

func TestRepoAddListUpdateRemove(t *testing.T) {
	home := berthtest.UseHelmHome(t)
	r := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, webCharts(t)...)

	if got, want := mustBerth(t, "repo", "add", "charts", r.URL), "\"charts\" has been added to your repositories\n"; got != want {
		t.Errorf("repo add printed %q, want %q", got, want)
	}
	if got, want := mustBerth(t, "repo", "add", "charts", r.URL), "\"charts\" already exists with the same configuration, skipping\n"; got != want {
		t.Errorf("second repo add printed %q, want %q", got, want)
	}
	if _, _, err := berthtest.RunBerth(t, "repo", "add", "charts", r.URL+"/other"); err == nil || !strings.Contains(err.Error(), "--force-update") {
		t.Errorf("repo add of another URL under the same name: %v, want an error naming --force-update", err)
	}
	for _, f := range []string{"charts-index.yaml", "charts-charts.txt"} {
		if _, err := os.Stat(filepath.Join(home.Cache, "repository", f)); err != nil {
			t.Errorf("cache after repo add: %v", err)
		}
	}

	var list []map[string]string
	if err := json.Unmarshal([]byte(mustBerth(t, "repo", "list", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	if want := []map[string]string{{"name": "charts", "url": r.URL}}; !cmp.Equal(list, want) {
		t.Errorf("repo list -o json = %v, want %v", list, want)
	}

	// A new version is found only after repo update.
	r.Publish(t, berthtest.VersionedChart(t, "web", "1.2.0", nil))
	if out := mustBerth(t, "search", "repo", "charts/web"); !strings.Contains(out, "1.1.0") {
		t.Errorf("search before update:\n%s\nwant 1.1.0 as the latest", out)
	}
	out := mustBerth(t, "repo", "update")
	if !strings.Contains(out, `...Successfully got an update from the "charts" chart repository`) {
		t.Errorf("repo update printed:\n%s", out)
	}
	if out := mustBerth(t, "search", "repo", "charts/web"); !strings.Contains(out, "1.2.0") {
		t.Errorf("search after update:\n%s\nwant 1.2.0", out)
	}
	if _, _, err := berthtest.RunBerth(t, "repo", "update", "nosuch"); err == nil {
		t.Error("repo update of an unknown repository succeeded")
	}

	if _, _, err := berthtest.RunBerth(t, "repo", "remove", "charts", "nosuch"); err == nil {
		t.Error("repo remove of an unknown repository succeeded")
	}
	if got := mustBerth(t, "repo", "list", "-o", "json"); !strings.Contains(got, "charts") {
		t.Errorf("a failed repo remove removed a repository: %s", got)
	}
	mustBerth(t, "repo", "remove", "charts")
	if got := mustBerth(t, "repo", "list", "-o", "json"); strings.TrimSpace(got) != "[]" {
		t.Errorf("repo list after remove = %s, want []", got)
	}
	if _, err := os.Stat(filepath.Join(home.Cache, "repository", "charts-index.yaml")); !os.IsNotExist(err) {
		t.Errorf("cached index after repo remove: %v, want it gone", err)
	}
}

func TestRepoAddCredentialsAndTLS(t *testing.T) {
	berthtest.UseHelmHome(t)
	r := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{TLS: true, Username: "alice", Password: "s3cret"}, webCharts(t)...)

	stdout, stderr, err := berthtest.RunBerth(t, "repo", "add", "secure", r.URL, "--username", "alice", "--password", "s3cret")
	if err == nil || !strings.Contains(err.Error(), "--ca-file") {
		t.Errorf("repo add of a TLS repository without its CA: %v (stdout %q, stderr %q), want an error naming --ca-file", err, stdout, stderr)
	}
	if _, _, err := berthtest.RunBerth(t, "repo", "add", "secure", r.URL, "--ca-file", r.CAFile, "--username", "alice", "--password", "wrong"); err == nil || !strings.Contains(err.Error(), "unauthorized") {
		t.Errorf("repo add with a wrong password: %v, want unauthorized", err)
	}
	mustBerth(t, "repo", "add", "secure", r.URL, "--ca-file", r.CAFile, "--username", "alice", "--password", "s3cret")
	if out := mustBerth(t, "search", "repo", "web", "--versions", "--devel"); strings.Count(out, "secure/web") != 3 {
		t.Errorf("search repo web --versions --devel:\n%s\nwant 3 versions", out)
	}
}
