package plugins

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// PlatformCommand is a command for an operating system and architecture (any when empty).
type PlatformCommand struct {
	OperatingSystem string   `json:"os"`
	Architecture    string   `json:"arch"`
	Command         string   `json:"command"`
	Args            []string `json:"args"`
}

// killGrace is how long a plugin's output may still be read once its process group was killed.
const killGrace = 2 * time.Second

// platformCommand picks the command of cmds for this machine as Helm does: the one of this OS
// and architecture, else the first of this OS without an architecture, else the first of none.
func platformCommand(cmds []PlatformCommand) ([]string, []string) {
	var command, args []string
	found, foundOS := false, false
	eq := strings.EqualFold
	for _, c := range cmds {
		if eq(c.OperatingSystem, runtime.GOOS) && eq(c.Architecture, runtime.GOARCH) {
			return strings.Split(c.Command, " "), c.Args
		}
		if (c.OperatingSystem != "" && !eq(c.OperatingSystem, runtime.GOOS)) || c.Architecture != "" {
			continue
		}
		if !foundOS && c.OperatingSystem != "" {
			command, args, found, foundOS = strings.Split(c.Command, " "), c.Args, true, true
		} else if !found {
			command, args, found = strings.Split(c.Command, " "), c.Args, true
		}
	}
	return command, args
}

// prepare is the program and arguments of cmds, with $VARIABLES of env expanded in the program
// (and in the arguments with expandArgs), as Helm's PrepareCommands does.
func prepare(cmds []PlatformCommand, expandArgs bool, env map[string]string) (string, []string, error) {
	parts, args := platformCommand(cmds)
	if len(parts) == 0 || parts[0] == "" {
		return "", nil, errors.New("no plugin command is applicable")
	}
	expand := func(s string) string {
		if !expandArgs {
			return s
		}
		return os.Expand(s, func(k string) string { return env[k] })
	}
	main := os.Expand(parts[0], func(k string) string { return env[k] })
	var out []string
	for _, a := range append(parts[1:], args...) {
		out = append(out, expand(a))
	}
	return main, out, nil
}

// environ is the process's environment with extra set over it.
func environ(extra map[string]string) map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			env[k] = v
		}
	}
	maps.Copy(env, extra)
	return env
}

// formatEnv is env as KEY=VALUE lines.
func formatEnv(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// run runs main with args and env within ctx: when ctx ends, the process and every process it
// started (its process group) are killed. stdout is limited to maxOut bytes (0: none kept).
// Its error holds the end of what the command wrote to stderr.
func run(ctx context.Context, main string, args []string, env map[string]string, stdout *limitedBuffer) error {
	return runWith(ctx, main, args, env, stdout, nil)
}

// runTo runs as run does, what the command writes (stdout and stderr) going to out.
func runTo(ctx context.Context, main string, args []string, env map[string]string, out io.Writer) error {
	if out == nil {
		out = io.Discard
	}
	return runWith(ctx, main, args, env, nil, out)
}

func runWith(ctx context.Context, main string, args []string, env map[string]string, stdout *limitedBuffer, out io.Writer) error {
	cmd := exec.CommandContext(ctx, main, args...)
	cmd.Env = formatEnv(env)
	stderr := &tailBuffer{max: 2048}
	cmd.Stderr = stderr
	switch {
	case stdout != nil:
		cmd.Stdout = stdout
	case out != nil:
		cmd.Stdout, cmd.Stderr = out, io.MultiWriter(out, stderr)
	}
	killGroup(cmd)
	cmd.WaitDelay = killGrace
	err := cmd.Run()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if stdout != nil && stdout.over {
		return fmt.Errorf("wrote more than %d bytes", stdout.max)
	}
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("%w: %s", err, strings.Join(strings.Fields(msg), " "))
		}
		return err
	}
	return nil
}

// limitedBuffer keeps up to max bytes and notes that more came.
type limitedBuffer struct {
	bytes.Buffer
	max  int64
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if int64(b.Len()+len(p)) > b.max {
		b.over = true
		return 0, errors.New("output too large")
	}
	return b.Buffer.Write(p)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = b.buf[len(b.buf)-b.max:]
	}
	return len(p), nil
}

func (b *tailBuffer) String() string { return string(b.buf) }
