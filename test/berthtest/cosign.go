package berthtest

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"oras.land/oras-go/v2/registry/remote"
)

// cosignModule is the directory of the module that pins the cosign CLI as its tool: a module of
// its own, so that cosign's dependencies stay out of berth's go.mod.
const cosignModule = "test/tools/cosign"

// cosignBinary builds the cosign CLI from its module (the go tool directive of
// test/tools/cosign/go.mod) once per test binary and returns the binary's path.
var cosignBinary = sync.OnceValues(func() (string, error) { return toolBinary(cosignModule, "cosign") })

// CosignEnv is what the cosign CLI runs with.
type CosignEnv struct {
	// Dir is its working directory: generate-key-pair writes cosign.key and cosign.pub there,
	// and relative paths in its arguments are relative to it.
	Dir string
	// Password is COSIGN_PASSWORD, which encrypts the key generate-key-pair writes and decrypts
	// the key sign reads.
	Password string
}

// NewCosignEnv is a CosignEnv in a new temporary directory, with password as its keys' password.
func NewCosignEnv(t testing.TB, password string) CosignEnv {
	t.Helper()
	return CosignEnv{Dir: t.TempDir(), Password: password}
}

// Path is the path of file in the environment's directory.
func (e CosignEnv) Path(file string) string { return filepath.Join(e.Dir, file) }

// RunCosign runs the cosign CLI, built from its module, with args as its whole command line, in
// env.Dir, with a new empty HOME (no docker credentials, no Sigstore TUF cache) and no network
// but the loopback one: every request to another host goes through a proxy that refuses it, so
// that cosign never reaches the public Sigstore services. It fails the test when cosign cannot
// be built.
func RunCosign(t testing.TB, env CosignEnv, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin, err := cosignBinary()
	if err != nil {
		t.Fatalf("build cosign: %v", err)
	}
	return runIsolated(t, bin, env.Dir, args, func(home string) []string {
		return []string{"DOCKER_CONFIG=" + filepath.Join(home, ".docker"), "TUF_ROOT=" + filepath.Join(home, ".sigstore", "root"),
			"COSIGN_PASSWORD=" + env.Password}
	})
}

// runIsolated runs the tool bin with args in dir, with a new empty HOME (and TMPDIR) and no
// network but the loopback one: every request to another host goes through a proxy that refuses
// it. Its environment is PATH, those, and what extra gives for the home.
func runIsolated(t testing.TB, bin, dir string, args []string, extra func(home string) []string) (stdout, stderr string, err error) {
	t.Helper()
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no network in a berth test: "+r.Host, http.StatusForbidden)
	}))
	defer refuse.Close()
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	// Loopback hosts (a test's registry) are never proxied; everything else is refused.
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + home,
		"HTTPS_PROXY=" + refuse.URL, "HTTP_PROXY=" + refuse.URL, "NO_PROXY=", "NO_COLOR=1"}, extra(home)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// MustCosign runs the cosign CLI as RunCosign does and returns its stdout; it fails the test,
// showing cosign's stderr, when cosign fails.
func MustCosign(t testing.TB, env CosignEnv, args ...string) string {
	t.Helper()
	stdout, stderr, err := RunCosign(t, env, args...)
	if err != nil {
		t.Fatalf("cosign %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout
}

// Repository is the oras client of repo on the registry, as its account and trusting its CA:
// what a test hands to provenance.Verify to read a chart and its signatures.
func (r *OCIRegistry) Repository(t testing.TB, repo string) *remote.Repository {
	t.Helper()
	return r.repository(t, repo)
}
