package lifecycle

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/internal/testenv"
)

// runBerth runs berth in-process with args as its whole command line. Its progress goes to a
// writer that takes a lock: berth reports progress from several goroutines at once (see
// TestProgressOutputOfConcurrentSteps).
func runBerth(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out bytes.Buffer
	var errOut lockedBuffer
	err = cli.Run(t.Context(), cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return out.String(), errOut.String(), err
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// berth runs berth against the test's cluster and namespace.
func berth(t *testing.T, env *testenv.Env, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return runBerth(t, append(args, "--kubeconfig", env.Kubeconfig, "-n", env.Namespace)...)
}

// mustBerth runs berth against the test's cluster and namespace and fails the test when it fails.
func mustBerth(t *testing.T, env *testenv.Env, args ...string) string {
	t.Helper()
	stdout, stderr, err := berth(t, env, args...)
	if err != nil {
		t.Fatalf("berth %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout
}

// helmBinary builds Helm v4's CLI from the module (the go tool directive) once per package; the
// build cache makes later builds free, and go tool -n prints the cached binary's path.
var helmBinary = sync.OnceValues(func() (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	var path string
	for _, args := range [][]string{{"tool", "helm", "version"}, {"tool", "-n", "helm"}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
		}
		path = strings.TrimSpace(string(out))
	}
	return path, nil
})

// runHelm runs Helm v4's binary with args as its whole command line, with its own empty
// configuration and no kubeconfig but the one args name.
func runHelm(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin, err := helmBinary()
	if err != nil {
		t.Fatalf("build helm: %v", err)
	}
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home,
		"KUBECONFIG="+filepath.Join(home, "no-kubeconfig"), "NO_COLOR=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// mustHelm runs helm against the test's cluster and namespace and fails the test when it fails.
func mustHelm(t *testing.T, env *testenv.Env, args ...string) string {
	t.Helper()
	stdout, stderr, err := runHelm(t, append(args, "--kubeconfig", env.Kubeconfig, "-n", env.Namespace)...)
	if err != nil {
		t.Fatalf("helm %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout
}

// sharedChart returns the path of one of the real charts in ../shared/charts.
func sharedChart(t *testing.T, name string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "..", "shared", "charts", name)
}

// writeChart writes a chart into a new directory: Chart.yaml for name, and files, by path
// relative to the chart (templates/x.yaml, crds/y.yaml, values.yaml).
func writeChart(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	all := map[string]string{"Chart.yaml": fmt.Sprintf("apiVersion: v2\nname: %s\nversion: 0.1.0\n", name)}
	maps.Copy(all, files)
	for path, content := range all {
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// suffix returns the random suffix of the test's namespace, to name cluster-scoped things.
func suffix(env *testenv.Env) string {
	return env.Namespace[strings.LastIndex(env.Namespace, "-")+1:]
}
