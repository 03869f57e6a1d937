package source_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	helmcli "helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/repo/v1"

	"github.com/berthdev/berth/internal/source"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/testca"
)

// addRepositories writes repositories.yaml of settings with entries.
func addRepositories(t *testing.T, settings *helmcli.EnvSettings, entries ...*repo.Entry) {
	t.Helper()
	f := repo.NewFile()
	for _, e := range entries {
		f.Update(e)
	}
	if err := os.MkdirAll(filepath.Dir(settings.RepositoryConfig), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteFile(settings.RepositoryConfig, 0o644); err != nil {
		t.Fatal(err)
	}
}

// chartWithDependencies writes the chart app whose dependencies are the charts web (0.1.0) of
// the repositories given, and returns its directory.
func chartWithDependencies(t *testing.T, repositories ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n")
	for i, r := range repositories {
		name := "web"
		if !strings.HasPrefix(r, "oci://") {
			name = "db"
		}
		fmt.Fprintf(&b, "  - name: %s\n    version: 0.1.0\n    repository: %q\n    alias: dep%d\n", name, r, i)
	}
	return berthtest.WriteChart(t, "app", map[string]string{"Chart.yaml": b.String()})
}

// newResolver is the resolver of the CLI with opts, through a fetcher of f.
func newResolver(t *testing.T, settings *helmcli.EnvSettings, opts source.Options, f source.FetchOptions) *source.Resolver {
	t.Helper()
	r, err := source.NewResolver(settings, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Fetcher = source.NewFetcher(f)
	return r
}

// anyAuthorized reports whether a request of got carried credentials.
func anyAuthorized(got []bool) bool { return slices.Contains(got, true) }

// TestDependencyCredentialsStayOnTheirRegistry: a username and password given for a chart's
// dependencies reach the one OCI registry they come from, never a chart repository's host; with
// dependencies from two registries, the update fails before any request, naming both; and a
// chart on disk installed with its dependencies updated gives the credentials of its reference
// to no dependency's registry.
func TestDependencyCredentialsStayOnTheirRegistry(t *testing.T) {
	berthtest.IsolateHelmFiles(t)
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{Username: "ci", Password: "s3cret"})
	push(t, helmcli.New(), webChart(t, "0.1.0"), reg.Ref("charts"), source.RegistryOptions{CAFile: reg.CAFile, Username: "ci", Password: "s3cret"})
	charts := startRecorder(t, false)
	charts.publishChart(t, "db")

	t.Run("one registry", func(t *testing.T) {
		settings := settingsIn(t)
		addRepositories(t, settings, &repo.Entry{Name: "extra", URL: charts.URL})
		dir := chartWithDependencies(t, reg.Ref("charts"), charts.URL)
		r := newResolver(t, settings, source.Options{}, source.DefaultFetchOptions())
		opts := source.DependencyOptions{Username: "ci", Password: "s3cret", CaFile: reg.CAFile}
		if err := r.Dependencies(t.Context(), dir, opts, source.DependencyUpdate); err != nil {
			t.Fatalf("dependency update with the registry's credentials: %v", err)
		}
		for _, archive := range []string{"web-0.1.0.tgz", "db-0.1.0.tgz"} {
			if _, err := os.Stat(filepath.Join(dir, "charts", archive)); err != nil {
				t.Errorf("charts/%s: %v", archive, err)
			}
		}
		if got := charts.requests(); len(got) == 0 || anyAuthorized(got) {
			t.Errorf("the chart repository of a dependency saw requests with credentials %v, want some, none with", got)
		}
	})

	t.Run("a registry that asks gets them", func(t *testing.T) {
		other := startRecorder(t, true)
		dir := chartWithDependencies(t, "oci://"+other.Host+"/charts")
		r := newResolver(t, settingsIn(t), source.Options{}, source.DefaultFetchOptions())
		opts := source.DependencyOptions{Username: "ci", Password: "s3cret", PlainHTTP: true}
		if err := r.Dependencies(t.Context(), dir, opts, source.DependencyUpdate); err == nil {
			t.Fatal("dependency update from a registry that refuses every request: got no error")
		}
		if got := other.requests(); !anyAuthorized(got) {
			t.Errorf("the registry of the dependencies saw requests with credentials %v, want some with", got)
		}
	})

	t.Run("two registries", func(t *testing.T) {
		other := startRecorder(t, true)
		dir := chartWithDependencies(t, reg.Ref("charts"), "oci://"+other.Host+"/charts")
		r := newResolver(t, settingsIn(t), source.Options{}, source.DefaultFetchOptions())
		opts := source.DependencyOptions{Username: "ci", Password: "s3cret", CaFile: reg.CAFile}
		for _, mode := range []source.DependencyMode{source.DependencyUpdate, source.DependencyBuild} {
			err := r.Dependencies(t.Context(), dir, opts, mode)
			var hosts *source.CredentialsHostsError
			if !errors.As(err, &hosts) {
				t.Fatalf("got %v, want a CredentialsHostsError", err)
			}
			want := []string{reg.Host, other.Host}
			slices.Sort(want)
			if diff := cmp.Diff(want, hosts.Hosts); diff != "" {
				t.Errorf("hosts (-want +got):\n%s", diff)
			}
		}
		if got := other.requests(); len(got) != 0 {
			t.Errorf("the second registry saw %d requests, want none", len(got))
		}
	})

	t.Run("chart on disk with its dependencies updated", func(t *testing.T) {
		other := startRecorder(t, true)
		dir := chartWithDependencies(t, "oci://"+other.Host+"/charts")
		var opts source.Options
		opts.Username, opts.Password, opts.PlainHTTP, opts.DependencyUpdate = "ci", "s3cret", true, true
		r := newResolver(t, settingsIn(t), opts, source.DefaultFetchOptions())
		if _, err := r.Locate(t.Context(), dir); err == nil {
			t.Fatal("locate with a dependency of a registry that refuses every request: got no error")
		}
		if got := other.requests(); len(got) == 0 || anyAuthorized(got) {
			t.Errorf("the dependency's registry saw requests with credentials %v, want some, none with", got)
		}
	})
}

// TestPullCredentialsStayOnTheRepositoryHost: a chart pulled from a repository given by URL,
// whose index names the archive on another server, is fetched with the credentials only from
// the repository's host, unless PassCredentialsAll says otherwise, as Helm's rule has it; a
// chart of an OCI registry that asks for them gets them.
func TestPullCredentialsStayOnTheRepositoryHost(t *testing.T) {
	berthtest.IsolateHelmFiles(t)
	for _, pass := range []bool{false, true} {
		t.Run(fmt.Sprintf("passCredentials=%t", pass), func(t *testing.T) {
			ca := testca.New(t)
			index := startPrivateServer(t, ca, "tenant", "s3cret", false)
			charts := startPrivateServer(t, ca, "", "", false)
			publish(t, index, charts)
			var opts source.Options
			opts.RepoURL, opts.Username, opts.Password = index.URL, "tenant", "s3cret"
			opts.CaFile, opts.PassCredentialsAll = writeTemp(t, ca.PEM), pass
			r := newResolver(t, settingsIn(t), opts, source.DefaultFetchOptions())
			dest := t.TempDir()
			if _, err := r.Pull(t.Context(), "web", source.PullOptions{DestDir: dest}); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dest, "web-0.1.0.tgz")); err != nil {
				t.Error(err)
			}
			if got := charts.requests(); len(got) == 0 || anyAuthorized(got) != pass {
				t.Errorf("the chart's server saw requests with credentials %v, want some, with credentials: %t", got, pass)
			}
			if got := index.requests(); len(got) == 0 || !got[len(got)-1] {
				t.Errorf("the repository saw requests with credentials %v, want the last with", got)
			}
		})
	}

	t.Run("registry", func(t *testing.T) {
		reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{Username: "ci", Password: "s3cret"})
		push(t, helmcli.New(), webChart(t, "0.1.0"), reg.Ref("charts"), source.RegistryOptions{CAFile: reg.CAFile, Username: "ci", Password: "s3cret"})
		var opts source.Options
		opts.Version, opts.Username, opts.Password, opts.CaFile = "0.1.0", "ci", "s3cret", reg.CAFile
		r := newResolver(t, settingsIn(t), opts, source.DefaultFetchOptions())
		dest := t.TempDir()
		if _, err := r.Pull(t.Context(), reg.Ref("charts/web"), source.PullOptions{DestDir: dest}); err != nil {
			t.Fatalf("pull with the registry's credentials: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dest, "web-0.1.0.tgz")); err != nil {
			t.Error(err)
		}
	})
}
