package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// stopGrace is how long a component gets to exit after SIGTERM before it is killed.
const stopGrace = 10 * time.Second

// supervisor runs the components as child processes of this binary and stops them in reverse
// order of their start.
type supervisor struct {
	logs   string
	procs  []*child
	exited chan string
}

type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

func (s *supervisor) start(name string, args ...string) error {
	if s.exited == nil {
		s.exited = make(chan string, 8)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(s.logs, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	cmd := exec.Command(self, append([]string{"component", name}, args...)...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	// A component dies with us even if we are killed; it also watches its parent (watchParent).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
	s.procs = append(s.procs, c)
	go func() {
		cmd.Wait()
		logf.Close()
		close(c.done)
		s.exited <- name
	}()
	return nil
}

// wait polls check until it succeeds, the deadline passes, ctx ends, or a component exits.
func (s *supervisor) wait(ctx context.Context, timeout time.Duration, what string, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		last = check(cctx)
		ccancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (last check: %v); logs in %s", what, context.Cause(ctx), last, s.logs)
		case name := <-s.exited:
			return fmt.Errorf("%s exited while waiting for %s; see %s", name, what, filepath.Join(s.logs, name+".log"))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *supervisor) stopAll() {
	for _, c := range slices.Backward(s.procs) {
		select {
		case <-c.done:
			continue
		default:
		}
		c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(stopGrace):
			// Kill the whole process group in case the component started children.
			syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.done
		}
	}
}
