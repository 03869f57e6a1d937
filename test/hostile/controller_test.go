package hostile_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// memoryLimit is the berth-controller chart's memory limit: the controller must hold within it
// whatever a tenant writes.
const memoryLimit = 512 << 20

// selectorKey labels the Releases of one test, whose controller reconciles only them: the tests
// of the package run at once, each with a controller of its own.
const selectorKey = "hostile.berth.dev/test"

// controllerProcess is berth controller running as a process of its own, with four workers,
// for the Releases of every namespace that carry the test's label (label).
type controllerProcess struct {
	t      *testing.T
	cmd    *exec.Cmd
	exited chan struct{}
	log    *berthtest.LockedBuffer
	// label is selectorKey=VALUE, the label of the test's Releases.
	label string
}

// startController starts berth controller --concurrency 4 for the test's Releases, with the
// extra flags given, once the Release CRD is served. When the test ends it fails the test if the process ended by itself or
// its peak resident memory went over memoryLimit, then kills it.
func startController(t *testing.T, env *testenv.Env, flags ...string) *controllerProcess {
	t.Helper()
	releasetest.Client(t, env) // the Release CRD, served before the controller starts
	bin, err := berthtest.BerthBinary()
	if err != nil {
		t.Fatalf("build berth: %v", err)
	}
	value := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(value) > 63 {
		value = value[:63]
	}
	value = strings.Trim(value, "-.")
	p := &controllerProcess{t: t, log: &berthtest.LockedBuffer{}, exited: make(chan struct{}), label: selectorKey + "=" + value}
	args := append([]string{"controller", "--kubeconfig", env.Kubeconfig,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--concurrency", "4",
		"--watch-label-selector", p.label, "--cache-dir", t.TempDir()}, flags...)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start berth controller: %v", err)
	}
	go func() {
		err := p.cmd.Wait()
		fmt.Fprintf(p.log, "=== exit: %v\n", err)
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.checkUp()
		if peak, err := p.peakRSS(); err != nil {
			t.Errorf("peak memory of berth controller: %v", err)
		} else {
			t.Logf("berth controller: peak resident memory %d MiB", peak>>20)
			if peak > memoryLimit {
				t.Errorf("berth controller: peak resident memory %d MiB, over the chart's limit of %d MiB", peak>>20, memoryLimit>>20)
			}
		}
		p.kill()
		if t.Failed() {
			t.Logf("output of berth controller:\n%s", p.log.String())
		}
	})
	return p
}

// LabelValue is the value of selectorKey on the test's Releases.
func (p *controllerProcess) LabelValue() string {
	_, v, _ := strings.Cut(p.label, "=")
	return v
}

// checkUp fails the test when the controller ended by itself.
func (p *controllerProcess) checkUp() {
	p.t.Helper()
	select {
	case <-p.exited:
		p.t.Errorf("berth controller ended by itself: %v", p.cmd.ProcessState)
	default:
	}
}

// peakRSS is the process's peak resident memory, VmHWM of /proc/PID/status.
func (p *controllerProcess) peakRSS() (int64, error) { return p.status("VmHWM") }

// kill ends the process, if it runs, and waits until it is gone.
func (p *controllerProcess) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Errorf("kill berth controller: %v", err)
	}
	<-p.exited
}

// release is the Release name of namespace ns, labelled for p's controller, whose spec is the
// YAML spec: lines each indented by two spaces, after a newline.
func (p *controllerProcess) release(ns, name, spec string) *v1alpha1.Release {
	p.t.Helper()
	var rel v1alpha1.Release
	manifest := fmt.Sprintf("apiVersion: berth.dev/v1alpha1\nkind: Release\nmetadata: {name: %s, namespace: %s, labels: {%s: %s}}\nspec:%s\n",
		name, ns, selectorKey, p.LabelValue(), spec)
	if err := yaml.Unmarshal([]byte(manifest), &rel); err != nil {
		p.t.Fatalf("Release %s/%s: %v", ns, name, err)
	}
	return &rel
}

// Output is what the controller has logged so far.
func (p *controllerProcess) Output() string { return p.log.String() }

// eventsOnceNamed waits until the namespace ns holds an Event of Release name whose note says
// say (the controller's recorder writes Events after the status), and returns the reason and
// note of every Event in ns, a line each: what a test then searches for what must not be there.
func eventsOnceNamed(t *testing.T, env *testenv.Env, ns, name, say string) string {
	t.Helper()
	var text strings.Builder
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, releasetest.WaitTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := env.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		text.Reset()
		found := false
		for _, e := range list.Items {
			text.WriteString(e.Reason + " " + e.Note + "\n")
			found = found || e.Regarding.Kind == "Release" && e.Regarding.Name == name && strings.Contains(e.Note, say)
		}
		return found, nil
	})
	if err != nil {
		t.Fatalf("no Event of Release %s/%s saying %q: %v; Events:\n%s", ns, name, say, err, text.String())
	}
	return text.String()
}
