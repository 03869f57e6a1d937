// Package berthtest holds the helpers that berth's end-to-end test packages share: running berth
// in-process and Helm v4's own binary against a test's cluster, the real charts and charts
// written on the fly, and assertions on release records and live objects.
//
// Every helper takes the test's testing.TB and fails the test on errors it does not return; the
// helpers that act on a cluster take the test's *testenv.Env and work in its namespace.
package berthtest

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/internal/testenv"
)

// RunBerth runs berth in-process with args as its whole command line and returns what it
// printed. Its stderr is a LockedBuffer: berth reports progress from several goroutines at once.
func RunBerth(t testing.TB, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var errOut LockedBuffer
	stdout, err = run(t, &errOut, args)
	return stdout, errOut.String(), err
}

// Berth runs berth in-process against the test's cluster and namespace: args and then
// --kubeconfig and -n.
func Berth(t testing.TB, env *testenv.Env, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return RunBerth(t, envArgs(env, args)...)
}

// MustBerth runs berth against the test's cluster and namespace and fails the test, showing
// berth's stderr, when berth fails.
func MustBerth(t testing.TB, env *testenv.Env, args ...string) (stdout, stderr string) {
	t.Helper()
	stdout, stderr, err := Berth(t, env, args...)
	if err != nil {
		t.Fatalf("berth %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout, stderr
}

// BerthStreaming runs berth against the test's cluster and namespace with stderr as its error
// stream, for tests that read berth's progress (or its error) while it runs.
func BerthStreaming(t testing.TB, env *testenv.Env, stderr *LockedBuffer, args ...string) (stdout string, err error) {
	t.Helper()
	return run(t, stderr, envArgs(env, args))
}

// Suffix returns the random suffix of the test's namespace, to name cluster-scoped objects and
// releases that must not collide with those of other tests.
func Suffix(env *testenv.Env) string {
	return env.Namespace[strings.LastIndex(env.Namespace, "-")+1:]
}

// run runs berth in-process with no input, args as its command line and stderr as its error
// stream, and returns its stdout.
func run(t testing.TB, stderr io.Writer, args []string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := cli.Run(t.Context(), cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: stderr}, args)
	return out.String(), err
}

// envArgs returns args followed by the flags that point a command at the test's cluster and
// namespace. It does not change args.
func envArgs(env *testenv.Env, args []string) []string {
	return append(args[:len(args):len(args)], "--kubeconfig", env.Kubeconfig, "-n", env.Namespace)
}
