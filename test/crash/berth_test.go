package crash

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// run is the outcome of one berth process.
type run struct {
	out    string
	err    error
	pid    int
	killed bool // ended by SIGKILL, from the test
}

// processTimeout is how long a berth process may run: one still running then is a hang.
const processTimeout = 3 * time.Minute

// process is a berth process that runs in the background.
type process struct {
	t    testing.TB
	args []string
	// hung says the process still ran at processTimeout, and was killed for it.
	hung bool
	cmd  *exec.Cmd
	done chan struct{} // closed once the process ended
	r    run
}

// berthProcess starts berth against the test's cluster and namespace with extra environment
// variables.
func berthProcess(t testing.TB, env *testenv.Env, vars []string, args ...string) *process {
	t.Helper()
	bin, err := berthtest.BerthBinary()
	if err != nil {
		t.Fatalf("build berth: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), processTimeout)
	cmd := exec.CommandContext(ctx, bin, append(args, "--kubeconfig", env.Kubeconfig, "-n", env.Namespace)...)
	cmd.Env = append(os.Environ(), vars...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start berth: %v", err)
	}
	p := &process{t: t, args: args, cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer cancel()
		err := cmd.Wait()
		p.r = run{out: out.String(), err: err, pid: cmd.Process.Pid}
		var ee *exec.ExitError
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			p.hung = true // killed by its timeout, not by the test
			return
		}
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				p.r.killed = true
			}
		}
	}()
	return p
}

// kill sends SIGKILL to the process. Whether it ended the process, or the process had ended
// already, its outcome says.
func (p *process) kill() { p.cmd.Process.Kill() }

// wait returns the outcome of the process once it ended; one that hung fails the test.
func (p *process) wait() run {
	<-p.done
	if p.hung {
		p.t.Errorf("berth %v still ran after %v: it hung, and was killed for it\n%s", p.args, processTimeout, p.r.out)
	}
	return p.r
}

// berth runs berth to its end.
func berth(t testing.TB, env *testenv.Env, vars []string, args ...string) run {
	t.Helper()
	return berthProcess(t, env, vars, args...).wait()
}

// mustBerth runs berth and fails the test when it fails.
func mustBerth(t testing.TB, env *testenv.Env, args ...string) string {
	t.Helper()
	r := berth(t, env, nil, args...)
	if r.err != nil {
		t.Fatalf("berth %v: %v\n%s", args, r.err, r.out)
	}
	return r.out
}
