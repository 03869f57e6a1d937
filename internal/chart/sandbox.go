package chart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/berthdev/berth/internal/par"
)

// RendererCommand is the hidden command of the berth binary that runs one sandboxed render
// (ServeRenderer): what a Sandbox runs unless told otherwise.
const RendererCommand = "__render"

// cpuLimitExit is the renderer's exit code when the kernel told it it reached its CPU limit.
const cpuLimitExit = 24

// stderrKept is how much of the renderer's standard error is read, to tell an exhausted memory.
const stderrKept = 4096

// Sandbox runs the template step in a child process under a budget: the child sets its own
// memory and CPU limits before it reads the request; the Sandbox kills it at the operation's
// deadline, reads at most Output bytes of its answer and counts the objects of the files. At most
// slots renders run at once, so that the children's memory, which counts where the caller's
// does (a container's cgroup), stays bounded.
type Sandbox struct {
	limits  RenderLimits
	command []string
	slots   *par.Slots
}

// RendererError is a sandboxed render that failed for a reason other than its templates or its
// budget: the renderer could not be started, or ended without an answer.
type RendererError struct{ Err error }

func (e *RendererError) Error() string { return "the renderer failed: " + e.Err.Error() }
func (e *RendererError) Unwrap() error { return e.Err }

// NewSandbox returns a Sandbox of limits running at most slots renders at once. command is the
// renderer's program and first arguments; none means this executable's RendererCommand.
func NewSandbox(limits RenderLimits, slots int, command ...string) (*Sandbox, error) {
	if limits.Memory <= 0 || limits.CPU <= 0 || limits.Output <= 0 || limits.Objects <= 0 || slots <= 0 {
		return nil, fmt.Errorf("render limits must be positive: %+v, %d at once", limits, slots)
	}
	if len(command) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the renderer: %w", err)
		}
		command = []string{exe, RendererCommand}
	}
	return &Sandbox{limits: limits, command: command, slots: par.NewSlots(slots)}, nil
}

// Limits are the budget of each render.
func (s *Sandbox) Limits() RenderLimits { return s.limits }

// RunTemplates runs step in a renderer and returns its files, or a *RenderBudgetError naming
// the limit that stopped it, or its templates' error. The renderer is gone when it returns.
func (s *Sandbox) RunTemplates(ctx context.Context, step TemplateStep) (map[string]string, error) {
	stopped := func(limit BudgetLimit) error {
		return &RenderBudgetError{Chart: step.Chart.Name(), Limit: limit, Limits: s.limits}
	}
	release, err := s.slots.Acquire(ctx)
	if err != nil {
		return nil, ctxStopped(ctx, stopped)
	}
	defer release()
	// Encoded once a renderer may start, not while waiting for one: the request holds the chart.
	req, err := encodeRequest(step)
	if err != nil {
		return nil, &RendererError{Err: err}
	}
	answer, exit, err := s.run(ctx, req)
	if err != nil {
		return nil, &RendererError{Err: err}
	}
	if limit, ok := classify(exit, s.limits); ok {
		return nil, stopped(limit)
	}
	switch {
	case exit.ctxErr != nil:
		return nil, ctxStopped(ctx, stopped)
	case !exit.success:
		return nil, &RendererError{Err: fmt.Errorf("%s after %v of CPU", exit.status, exit.cpu.Round(time.Millisecond))}
	}
	files, err := readAnswer(answer)
	if err != nil {
		var tmpl *renderedError
		if errors.As(err, &tmpl) {
			return nil, err
		}
		return nil, &RendererError{Err: err}
	}
	if countDocuments(files) > s.limits.Objects {
		return nil, stopped(LimitObjects)
	}
	return files, nil
}

// ctxStopped is the error of a render stopped by ctx: its deadline is a budget's limit; a
// cancellation is the cancellation's cause.
func ctxStopped(ctx context.Context, stopped func(BudgetLimit) error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return stopped(LimitDeadline)
	}
	return context.Cause(ctx)
}

// exitInfo is how a renderer ended.
type exitInfo struct {
	outputOver bool
	ctxErr     error
	success    bool
	// signaled says the renderer was killed by a signal (its CPU limit's, or ours).
	signaled bool
	// code is the renderer's exit code, -1 if it was killed.
	code   int
	cpu    time.Duration
	stderr string
	status string
}

// classify is the limit of the budget that stopped a renderer that ended as exit, if one did.
func classify(exit exitInfo, limits RenderLimits) (BudgetLimit, bool) {
	switch {
	case exit.outputOver:
		return LimitOutput, true
	case exit.ctxErr != nil && errors.Is(exit.ctxErr, context.DeadlineExceeded):
		return LimitDeadline, true
	case exit.ctxErr != nil || exit.success:
		return "", false
	case exit.code == cpuLimitExit, exit.signaled && exit.cpu >= cpuSeconds(limits.CPU)*9/10:
		return LimitCPU, true
	case outOfMemory(exit.stderr):
		return LimitMemory, true
	}
	return "", false
}

// outOfMemory says the renderer's standard error is Go's runtime failing to allocate, or to
// start a thread beyond those whose stacks its address space allows.
func outOfMemory(stderr string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "failed to create new OS thread", "thread exhaustion"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// cpuSeconds is d rounded up to a second, as RLIMIT_CPU counts it.
func cpuSeconds(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

// run runs the renderer on req, killed when ctx ends or its answer passes the output limit.
func (s *Sandbox) run(ctx context.Context, req []byte) ([]byte, exitInfo, error) {
	args := append(s.command[1:len(s.command):len(s.command)],
		"--memory="+strconv.FormatInt(s.limits.Memory, 10), "--cpu="+s.limits.CPU.String())
	cmd := exec.CommandContext(ctx, s.command[0], args...)
	cmd.Env = rendererEnv(os.Environ())
	stderr := &capped{max: stderrKept}
	cmd.Stderr = stderr
	cmd.SysProcAttr = procAttr()
	cmd.WaitDelay = time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, exitInfo{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, exitInfo{}, err
	}
	if err := cmd.Start(); err != nil {
		return nil, exitInfo{}, err
	}
	// Written from a goroutine that then ends, so that the request (the chart) is not held while
	// the renderer works: nothing else refers to it. Wait closes the pipe if the renderer ends
	// first, which ends the write.
	go func(req []byte) {
		_, _ = stdin.Write(req)
		_ = stdin.Close()
	}(req)
	answer, rerr := io.ReadAll(io.LimitReader(stdout, s.limits.Output+1))
	over := int64(len(answer)) > s.limits.Output
	if over || rerr != nil {
		_ = cmd.Process.Kill()
	}
	werr := cmd.Wait()
	exit := exitInfo{outputOver: over, ctxErr: ctx.Err(), success: werr == nil && rerr == nil, stderr: stderr.String()}
	if st := cmd.ProcessState; st != nil {
		exit.cpu = st.UserTime() + st.SystemTime()
		exit.signaled = signaled(st)
		exit.code = st.ExitCode()
		exit.status = st.String()
	}
	return answer, exit, nil
}

// rendererEnv is the renderer's environment: environ, with the C library's memory allocator
// held to one arena. Linked with the C library, the renderer's threads may each take an arena of
// their own, and on 64-bit Linux each arena reserves 64 MiB of address space: counted against
// the renderer's address-space limit, two of them stopped renders whose heap was at 16 to 29 MiB
// of a 128 MiB budget, when threads were started on a loaded machine. Go's own allocations never
// use the C library's allocator.
func rendererEnv(environ []string) []string {
	env := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		if !strings.HasPrefix(kv, mallocArenaMax+"=") {
			env = append(env, kv)
		}
	}
	return append(env, mallocArenaMax+"=1")
}

// mallocArenaMax is the C library's setting of how many arenas its allocator may take.
const mallocArenaMax = "MALLOC_ARENA_MAX"

// capped keeps the first max bytes written to it and discards the rest.
type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// countDocuments counts the YAML documents of the rendered files, NOTES.txt aside.
func countDocuments(files map[string]string) int {
	n := 0
	for name, text := range files {
		if strings.HasSuffix(name, notesFile) {
			continue
		}
		for doc := range strings.SplitSeq(text, "\n---") {
			if strings.TrimSpace(strings.TrimPrefix(doc, "---")) != "" {
				n++
			}
		}
	}
	return n
}
