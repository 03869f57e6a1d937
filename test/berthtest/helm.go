package berthtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/berthdev/berth/internal/testenv"
)

// helmBinary builds Helm v4's CLI from the module (its go tool directive) once per test binary
// and returns the binary's path.
var helmBinary = sync.OnceValues(func() (string, error) { return toolBinary(".", "helm") })

// toolBinary builds the tool name of the module in dir (relative to the repository's root; its
// go tool directive) and returns the binary's path: go tool NAME version (or NAME with the
// arguments given, for a tool that has no version command) builds it into the build cache, and
// go tool -n NAME prints the cached binary's path.
func toolBinary(dir, name string, versionArgs ...string) (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	if len(versionArgs) == 0 {
		versionArgs = []string{"version"}
	}
	var path string
	for _, args := range [][]string{append([]string{"tool", name}, versionArgs...), {"tool", "-n", name}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = filepath.Join(root, dir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), dir, err, stderr.String())
		}
		path = strings.TrimSpace(string(out))
	}
	return path, nil
}

// RunHelm runs Helm v4's binary with args as its whole command line, with its own empty
// configuration and no kubeconfig but the one args name. It fails the test when Helm cannot be
// built.
func RunHelm(t testing.TB, args ...string) (stdout, stderr string, err error) {
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

// Helm runs Helm v4's binary against the test's cluster and namespace: args and then
// --kubeconfig and -n.
func Helm(t testing.TB, env *testenv.Env, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return RunHelm(t, envArgs(env, args)...)
}

// MustHelm runs Helm against the test's cluster and namespace and returns its stdout; it fails
// the test, showing Helm's stderr, when Helm fails.
func MustHelm(t testing.TB, env *testenv.Env, args ...string) string {
	t.Helper()
	stdout, stderr, err := Helm(t, env, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout
}
