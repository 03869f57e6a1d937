package plugins

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/repo/v1"

	"github.com/berthdev/berth/test/berthtest"
)

// TestEnvMatchesHelm: berth env prints what helm env prints for the same environment, but for
// HELM_BIN (the program itself), whether the variables are set or left to their defaults.
func TestEnvMatchesHelm(t *testing.T) {
	berthtest.UseHelmHome(t)
	// berth's rate limit differs from helm's unless the variables set it.
	t.Setenv("HELM_QPS", "20")
	t.Setenv("HELM_BURST_LIMIT", "200")
	withoutBin := func(out string) string {
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			if !strings.HasPrefix(l, "HELM_BIN=") {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	for _, env := range []map[string]string{
		{},
		{"HELM_NAMESPACE": "team-a", "HELM_MAX_HISTORY": "7", "HELM_PLUGINS": t.TempDir(), "HELM_DEBUG": "true",
			"HELM_KUBECONTEXT": "elsewhere", "HELM_REPOSITORY_CONFIG": filepath.Join(t.TempDir(), "repos.yaml")},
	} {
		for k, v := range env {
			t.Setenv(k, v)
		}
		got, want := mustBerth(t, "env"), berthtest.MustHelmShared(t, "env")
		if diff := cmp.Diff(withoutBin(want), withoutBin(got)); diff != "" {
			t.Errorf("berth env with %v (-helm +berth):\n%s", env, diff)
		}
		if !strings.Contains(got, "HELM_BIN=") {
			t.Errorf("berth env:\n%s\nwant HELM_BIN", got)
		}
		for _, name := range []string{"HELM_PLUGINS", "HELM_NAMESPACE", "HELM_QPS"} {
			if got, want := mustBerth(t, "env", name), berthtest.MustHelmShared(t, "env", name); got != want {
				t.Errorf("berth env %s = %q, helm env %s = %q", name, got, name, want)
			}
		}
	}
}

// TestRepoIndex: berth repo index makes an index of a directory of packaged charts that helm
// reads as a repository, and --merge keeps the entries of the index merged in.
func TestRepoIndex(t *testing.T) {
	berthtest.UseHelmHome(t)
	dir := t.TempDir()
	for _, c := range []struct{ name, version string }{{"web", "1.0.0"}, {"web", "1.1.0"}, {"db", "0.3.0"}} {
		berthtest.PackageChart(t, berthtest.VersionedChart(t, c.name, c.version, nil), dir)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)

	old := t.TempDir()
	berthtest.PackageChart(t, berthtest.VersionedChart(t, "legacy", "0.0.1", nil), old)
	mustBerth(t, "repo", "index", old, "--url", "https://old.example.com/charts")

	mustBerth(t, "repo", "index", dir, "--url", srv.URL, "--merge", filepath.Join(old, "index.yaml"))
	idx, err := repo.LoadIndexFile(filepath.Join(dir, "index.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, version, url string }{
		{"web", "1.1.0", srv.URL + "/web-1.1.0.tgz"}, {"db", "0.3.0", srv.URL + "/db-0.3.0.tgz"},
		{"legacy", "0.0.1", "https://old.example.com/charts/legacy-0.0.1.tgz"},
	} {
		cv, err := idx.Get(c.name, c.version)
		if err != nil || len(cv.URLs) == 0 || cv.URLs[0] != c.url {
			t.Errorf("index entry %s %s: %+v, %v; want URL %s", c.name, c.version, cv, err, c.url)
		}
	}

	berthtest.MustHelmShared(t, "repo", "add", "indexed", srv.URL)
	out := berthtest.MustHelmShared(t, "search", "repo", "indexed/", "--versions")
	found := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			found[f[0]+" "+f[1]] = true
		}
	}
	for _, want := range []string{"indexed/web 1.1.0", "indexed/web 1.0.0", "indexed/db 0.3.0", "indexed/legacy 0.0.1"} {
		if !found[want] {
			t.Errorf("helm search repo of berth's index:\n%s\nwant %q", out, want)
		}
	}
	if got := mustBerth(t, "show", "chart", "indexed/web"); !strings.Contains(got, "version: 1.1.0") {
		t.Errorf("berth show chart indexed/web:\n%s", got)
	}
}

// TestRepoIndexBadMergeChangesNothing: an index given with --merge that does not load leaves
// the directory's index.yaml as it was.
func TestRepoIndexBadMergeChangesNothing(t *testing.T) {
	dir := t.TempDir()
	berthtest.PackageChart(t, berthtest.VersionedChart(t, "web", "1.0.0", nil), dir)
	index := filepath.Join(dir, "index.yaml")
	if err := os.WriteFile(index, []byte("apiVersion: v1\nentries: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("entries: [not, a, map\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg := berthFails(t, "repo", "index", dir, "--merge", bad); !strings.Contains(msg, "merge failed") || !strings.Contains(msg, bad) {
		t.Errorf("berth repo index --merge of a bad index: %s", msg)
	}
	if b, _ := os.ReadFile(index); string(b) != "apiVersion: v1\nentries: {}\n" {
		t.Errorf("index.yaml changed:\n%s", b)
	}
}
