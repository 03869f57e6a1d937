package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berthdev/berth/internal/chart"
)

const (
	// readyLinePrefix starts the line devcluster prints once the cluster is ready.
	readyLinePrefix = "devcluster ready"
	// readyTimeout bounds how long a cluster may take to become ready.
	readyTimeout = 2 * time.Minute
	// stopGrace is how long a cluster may take to stop after SIGTERM before it is killed.
	stopGrace = 30 * time.Second
	// logTailLines is how many lines of each component log are shown when a cluster fails.
	logTailLines = 30
)

// pkgCluster is the cluster Main started for the test package. It is written
// once, before the tests run, and only read afterwards.
var pkgCluster *cluster

// cluster is a running devcluster process.
type cluster struct {
	dir        string
	kubeconfig string
	auditLog   string // the API server's audit log, one JSON event a request
	config     *rest.Config
	cmd        *exec.Cmd
	exited     chan struct{} // closed when cmd has exited
	waitErr    error         // valid once exited is closed
	stderr     *syncBuffer
}

// Main is the TestMain of a package of integration tests: it builds the
// devcluster binary if needed, starts one cluster for the package, runs the
// tests, stops the cluster and exits with the tests' exit code. When the
// cluster cannot start, the package fails; it is never skipped.
//
// A test binary started as the renderer of a controller's render sandbox (the berth binary's
// hidden chart.RendererCommand, which the sandbox runs as this executable) serves that render
// instead, as berth does.
func Main(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == chart.RendererCommand {
		if err := chart.ServeRenderer(os.Args[2:], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if fuzzingOnly() {
		// A fuzz target is pure: its workers (each a process of this binary) and a run of
		// fuzz targets alone need no cluster, and starting one each would eat the fuzzing's time.
		return m.Run()
	}
	bin, err := EnsureDevcluster()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "berth-devcluster-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: start devcluster: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	c, err := startCluster(ctx, bin, dir)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n%s", err, logTails(dir))
		fmt.Fprintf(os.Stderr, "testenv: devcluster state kept in %s\n", dir)
		return 1
	}
	pkgCluster = c

	code := m.Run()

	if err := c.stop(stopGrace); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n%s", err, logTails(dir))
		if code == 0 {
			code = 1
		}
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "testenv: devcluster state and logs kept in %s\n", dir)
	} else {
		os.RemoveAll(dir)
	}
	return code
}

// startCluster runs `bin up --dir dir --audit-log dir/audit.log` and waits until it prints its
// ready line.
func startCluster(ctx context.Context, bin, dir string) (*cluster, error) {
	c := &cluster{
		dir:        dir,
		kubeconfig: filepath.Join(dir, "kubeconfig"),
		auditLog:   filepath.Join(dir, "audit.log"),
		exited:     make(chan struct{}),
		stderr:     &syncBuffer{},
	}
	c.cmd = exec.Command(bin, "up", "--dir", dir, "--audit-log", c.auditLog)
	c.cmd.Stderr = c.stderr
	c.cmd.SysProcAttr = sysProcAttr()
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start devcluster: %w", err)
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start devcluster: %w", err)
	}

	ready := make(chan struct{})
	go func() {
		scanReady(stdout, ready)
		c.waitErr = c.cmd.Wait()
		close(c.exited)
	}()

	select {
	case <-ready:
	case <-c.exited:
		return nil, fmt.Errorf("start devcluster in %s: exited before ready: %v\n%s", dir, c.waitErr, c.stderr)
	case <-ctx.Done():
		stopErr := c.stop(stopGrace)
		return nil, fmt.Errorf("start devcluster in %s: not ready: %w\n%s", dir, errors.Join(ctx.Err(), stopErr), c.stderr)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		stopErr := c.stop(stopGrace)
		return nil, fmt.Errorf("start devcluster in %s: load kubeconfig: %w", dir, errors.Join(err, stopErr))
	}
	c.config = cfg
	return c, nil
}

// scanReady reads the cluster's stdout to its end, closing ready at the ready line.
func scanReady(r io.Reader, ready chan<- struct{}) {
	sc := bufio.NewScanner(r)
	signaled := false
	for sc.Scan() {
		if !signaled && strings.HasPrefix(sc.Text(), readyLinePrefix) {
			close(ready)
			signaled = true
		}
	}
	io.Copy(io.Discard, r) // keep draining if a line was too long
}

// stop sends SIGTERM and waits for the cluster to exit, killing its process
// group once grace has passed.
func (c *cluster) stop(grace time.Duration) error {
	select {
	case <-c.exited:
		return c.exitError()
	default:
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop devcluster: %w", err)
	}
	select {
	case <-c.exited:
		return c.exitError()
	case <-time.After(grace):
	}
	killGroup(c.cmd.Process.Pid)
	<-c.exited
	return fmt.Errorf("stop devcluster: still running %s after SIGTERM, killed", grace)
}

func (c *cluster) exitError() error {
	if c.waitErr != nil {
		return fmt.Errorf("stop devcluster: %w\n%s", c.waitErr, c.stderr)
	}
	return nil
}

// logTails renders the last lines of every log under dir/logs.
func logTails(dir string) string {
	paths, _ := filepath.Glob(filepath.Join(dir, "logs", "*"))
	var b strings.Builder
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "--- %s (last %d lines)\n%s\n", p, logTailLines, tail(data, logTailLines))
	}
	return b.String()
}

// tail returns the last n lines of data.
func tail(data []byte, n int) []byte {
	data = bytes.TrimRight(data, "\n")
	start := len(data)
	for ; n > 0; n-- {
		i := bytes.LastIndexByte(data[:start], '\n')
		if i < 0 {
			return data
		}
		start = i
	}
	return data[start+1:]
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// fuzzingOnly says whether this test binary runs fuzz targets alone: as a fuzz worker, or as a
// fuzz run that runs no test (-run '^$' -fuzz F, as scripts/fuzz.sh does).
func fuzzingOnly() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	value := func(name string) string {
		if f := flag.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	return value("test.fuzzworker") == "true" || (value("test.fuzz") != "" && value("test.run") == "^$")
}
