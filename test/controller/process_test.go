package controller_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// controllerProcess is berth controller running as a process of its own, for the Releases of the
// test's namespace. Each start is a new process; its output goes to one log the test shows when
// it fails.
type controllerProcess struct {
	t        testing.TB
	env      *testenv.Env
	bin      string
	cacheDir string
	log      *berthtest.LockedBuffer

	cmd    *exec.Cmd
	exited chan struct{}
	starts int
	// flags are added to the controller's command line.
	flags []string
}

// newController returns a controller for the test's namespace, not started yet. Whatever runs
// when the test ends is killed.
func newController(t testing.TB, env *testenv.Env) *controllerProcess {
	t.Helper()
	bin, err := berthtest.BerthBinary()
	if err != nil {
		t.Fatalf("build berth: %v", err)
	}
	p := &controllerProcess{t: t, env: env, bin: bin, cacheDir: t.TempDir(), log: &berthtest.LockedBuffer{}}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("output of berth controller (%d starts):\n%s", p.starts, p.log.String())
		}
	})
	return p
}

// start starts a controller process.
func (p *controllerProcess) start() {
	p.t.Helper()
	p.starts++
	args := append([]string{"controller", "--kubeconfig", p.env.Kubeconfig, "-n", p.env.Namespace,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--concurrency", "4"}, p.flags...)
	cmd := exec.Command(p.bin, args...)
	// The controller's chart caches live under the user's cache directory: the test's own,
	// kept across restarts as a real controller's would be.
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+p.cacheDir)
	fmt.Fprintf(p.log, "=== start %d\n", p.starts)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("start berth controller: %v", err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		err := cmd.Wait()
		fmt.Fprintf(p.log, "=== exit: %v\n", err)
		close(exited)
	}(cmd, p.exited)
}

// kill ends the running controller process with SIGKILL, as a crash or an OOM kill would, and
// waits until it is gone. It fails the test when the process had ended by itself.
func (p *controllerProcess) kill() {
	if p.cmd == nil {
		return
	}
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	select {
	case <-exited:
		p.t.Errorf("berth controller ended before it was killed: %v", cmd.ProcessState)
		return
	default:
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Errorf("kill berth controller: %v", err)
	}
	<-exited
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		p.t.Errorf("berth controller ended with %v, not by SIGKILL", cmd.ProcessState)
	}
}

// running fails the test when the controller process ended by itself.
func (p *controllerProcess) running() {
	p.t.Helper()
	if p.cmd == nil {
		return
	}
	select {
	case <-p.exited:
		p.t.Fatalf("berth controller ended by itself: %v", p.cmd.ProcessState)
	default:
	}
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
