package berthtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/repo/v1"
)

// ChartRepoOptions configure a test chart repository.
type ChartRepoOptions struct {
	// TLS serves the repository over HTTPS with a certificate of its own (see CAFile).
	TLS bool
	// Username and Password, when set, are required with basic auth on every request.
	Username, Password string
}

// ChartRepo is a Helm chart repository served by the test with net/http/httptest: packaged
// charts and an index.yaml made by Helm's repo.IndexDirectory.
type ChartRepo struct {
	// URL is the repository's URL (no trailing slash).
	URL string
	// Dir holds the archives and index.yaml the server serves.
	Dir string
	// CAFile is the PEM file of the server's certificate, with TLS.
	CAFile string
	opts   ChartRepoOptions
}

// NewChartRepo starts a chart repository serving the charts in chartDirs, packaged. The server
// stops when the test ends.
func NewChartRepo(t testing.TB, opts ChartRepoOptions, chartDirs ...string) *ChartRepo {
	t.Helper()
	r := &ChartRepo{Dir: t.TempDir(), opts: opts}
	handler := http.FileServer(http.Dir(r.Dir))
	auth := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if opts.Username != "" {
			u, p, ok := req.BasicAuth()
			if !ok || u != opts.Username || p != opts.Password {
				w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		handler.ServeHTTP(w, req)
	})
	var srv *httptest.Server
	if opts.TLS {
		srv = httptest.NewTLSServer(auth)
		r.CAFile = filepath.Join(t.TempDir(), "ca.pem")
		cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
		if err := os.WriteFile(r.CAFile, cert, 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		srv = httptest.NewServer(auth)
	}
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	r.Publish(t, chartDirs...)
	return r
}

// Publish packages the charts in chartDirs into the repository and rewrites its index.
func (r *ChartRepo) Publish(t testing.TB, chartDirs ...string) {
	t.Helper()
	for _, dir := range chartDirs {
		PackageChart(t, dir, r.Dir)
	}
	r.Reindex(t)
}

// Reindex rewrites index.yaml from the archives in Dir, with Helm's repo.IndexDirectory.
func (r *ChartRepo) Reindex(t testing.TB) {
	t.Helper()
	idx, err := repo.IndexDirectory(r.Dir, r.URL)
	if err != nil {
		t.Fatalf("index %s: %v", r.Dir, err)
	}
	idx.SortEntries()
	if err := idx.WriteFile(filepath.Join(r.Dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ArchiveURL is the URL of the archive of chart name at version.
func (r *ChartRepo) ArchiveURL(name, version string) string {
	return fmt.Sprintf("%s/%s-%s.tgz", r.URL, name, version)
}

// PackageChart packages the chart directory dir into dest with Helm's chartutil.Save and
// returns the archive's path.
func PackageChart(t testing.TB, dir, dest string) string {
	t.Helper()
	ch, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatalf("load chart %s: %v", dir, err)
	}
	path, err := chartutil.Save(ch, dest)
	if err != nil {
		t.Fatalf("package chart %s: %v", dir, err)
	}
	return path
}

// VersionedChart writes chart name at version (apiVersion v2, with appVersion and a
// description) with files, as WriteChart does, and returns its directory.
func VersionedChart(t testing.TB, name, version string, files map[string]string) string {
	t.Helper()
	all := map[string]string{"Chart.yaml": fmt.Sprintf(
		"apiVersion: v2\nname: %s\nversion: %s\nappVersion: \"%s\"\ndescription: The %s chart\n", name, version, version, name)}
	for k, v := range files {
		all[k] = v
	}
	return WriteChart(t, name, all)
}

// HelmHome is the temporary set of Helm's configuration, cache and data directories a test
// runs with.
type HelmHome struct {
	Config, Cache, Data string
}

// UseHelmHome points Helm's settings (berth's and the helm binary's run with RunHelmShared) at
// new temporary directories for the rest of the test, through HELM_CONFIG_HOME,
// HELM_CACHE_HOME, HELM_DATA_HOME and DOCKER_CONFIG, with every variable that would override a path within
// them unset. The machine's Helm files are never touched.
func UseHelmHome(t *testing.T) HelmHome {
	t.Helper()
	base := t.TempDir()
	h := HelmHome{Config: filepath.Join(base, "config"), Cache: filepath.Join(base, "cache"), Data: filepath.Join(base, "data")}
	t.Setenv("HELM_CONFIG_HOME", h.Config)
	t.Setenv("HELM_CACHE_HOME", h.Cache)
	t.Setenv("HELM_DATA_HOME", h.Data)
	// Helm's registry client falls back to Docker's credentials.
	t.Setenv("DOCKER_CONFIG", filepath.Join(base, "docker"))
	for _, name := range []string{"HELM_REPOSITORY_CONFIG", "HELM_REPOSITORY_CACHE", "HELM_REGISTRY_CONFIG", "HELM_CONTENT_CACHE", "HELM_PLUGINS"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	return h
}

// Files returns every file under the Helm home, by path, with a digest of its content: what a
// test compares to show that a command left Helm's files as they were.
func (h HelmHome) Files(t testing.TB) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, root := range []string{h.Config, h.Cache, h.Data} {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() {
				files[path+"/"] = "dir"
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			files[path] = hex.EncodeToString(sum[:])
			return nil
		})
	}
	return files
}

// RunHelmShared runs Helm v4's binary with args as its whole command line in the test's
// environment, so that it shares the Helm home of UseHelmHome with berth.
func RunHelmShared(t testing.TB, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin, err := helmBinary()
	if err != nil {
		t.Fatalf("build helm: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// MustHelmShared runs RunHelmShared and fails the test, showing Helm's stderr, when Helm fails.
func MustHelmShared(t testing.TB, args ...string) string {
	t.Helper()
	stdout, stderr, err := RunHelmShared(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout
}
