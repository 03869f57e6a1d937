package chart

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// TestMain lets this test binary be the renderer its sandboxes run, as the berth binary is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == RendererCommand {
		if err := ServeRenderer(os.Args[2:], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testSandbox is a sandbox of limits whose renderer is this test binary.
func testSandbox(t testing.TB, limits RenderLimits) *Sandbox {
	t.Helper()
	s, err := NewSandbox(limits, 1, os.Args[0], RendererCommand)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hostileChart is a chart of one template.
func hostileChart(template string) *chartv2.Chart {
	return &chartv2.Chart{
		Metadata:  &chartv2.Metadata{APIVersion: "v2", Name: "hostile", Version: "0.1.0"},
		Templates: []*common.File{{Name: "templates/t.yaml", Data: []byte(template)}},
	}
}

func TestSandboxRendersAsInProcess(t *testing.T) {
	ch, err := Load(filepath.Join("testdata", "app"))
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{"greeting": "hi", "big": 1000000, "ratio": 0.5, "list": []any{int64(1), "two"}}
	opts := RenderOptions{ReleaseName: "rel", Namespace: "ns", Revision: 3, IsUpgrade: true}
	want, err := Render(context.Background(), ch, vals, opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.Templates = testSandbox(t, DefaultRenderLimits())
	got, err := Render(context.Background(), ch, vals, opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Manifest, got.Manifest); diff != "" {
		t.Errorf("manifest (-in process +sandbox):\n%s", diff)
	}
	if want.Notes != got.Notes {
		t.Errorf("notes: %q, want %q", got.Notes, want.Notes)
	}
}

func TestSandboxTemplateError(t *testing.T) {
	_, err := Render(context.Background(), hostileChart(`{{ fail "no" }}`), nil,
		RenderOptions{ReleaseName: "rel", Templates: testSandbox(t, DefaultRenderLimits())})
	var tmpl *TemplateError
	if !errors.As(err, &tmpl) || tmpl.Template != "hostile/templates/t.yaml" {
		t.Fatalf("error %v, want a *TemplateError of hostile/templates/t.yaml", err)
	}
}

// TestSandboxStopsHostileTemplates renders the templates that took a controller to 8.6 GB and
// kept a core busy past the deadline, and checks each is stopped by the limit it passed, and that
// its renderer is gone.
func TestSandboxStopsHostileTemplates(t *testing.T) {
	limits := RenderLimits{Memory: 128 << 20, CPU: 2 * time.Second, Output: 1 << 20, Objects: 10}
	for _, tc := range []struct {
		name, template string
		limits         RenderLimits
		timeout        time.Duration
		// want are the limits that may stop it: two nested ranges build a list of 100,000
		// numbers on each pass of the outer one, so the memory limit may come before the CPU's
		// or the deadline, as the collector keeps up or not.
		want []BudgetLimit
	}{
		{"repeat", `{{ repeat 1073741824 "x" }}`, limits, time.Minute, []BudgetLimit{LimitMemory}},
		{"nested ranges", `{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}`, limits, time.Minute, []BudgetLimit{LimitCPU, LimitMemory}},
		{"nested ranges past the deadline", `{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}`,
			RenderLimits{Memory: limits.Memory, CPU: time.Minute, Output: limits.Output, Objects: limits.Objects}, time.Second, []BudgetLimit{LimitDeadline, LimitMemory}},
		{"output", `{{ repeat 2097152 "x" }}`, limits, time.Minute, []BudgetLimit{LimitOutput}},
		{"objects", `{{ range until 11 }}
---
kind: ConfigMap
{{ end }}`, limits, time.Minute, []BudgetLimit{LimitObjects}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSandbox(t, tc.limits)
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			_, err := Render(ctx, hostileChart(tc.template), nil, RenderOptions{ReleaseName: "rel", Templates: s})
			var budget *RenderBudgetError
			if !errors.As(err, &budget) || !slices.Contains(tc.want, budget.Limit) || budget.Chart != "hostile" {
				t.Fatalf("error %v, want a *RenderBudgetError of chart hostile at one of its limits %v", err, tc.want)
			}
			if children := liveChildren(t); len(children) > 0 {
				t.Errorf("renderers still running: %v", children)
			}
		})
	}
}

// liveChildren are the processes whose parent is this one and that have not been reaped.
func liveChildren(t *testing.T) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range stats {
		data, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...
		_, rest, _ := strings.Cut(string(data), ") ")
		if f := strings.Fields(rest); len(f) > 1 && f[1] == fmt.Sprint(syscall.Getpid()) {
			out = append(out, p+": "+f[0])
		}
	}
	return out
}

func TestClassify(t *testing.T) {
	limits := RenderLimits{Memory: 64 << 20, CPU: 1500 * time.Millisecond, Output: 100, Objects: 10}
	for _, tc := range []struct {
		name   string
		exit   exitInfo
		want   BudgetLimit
		wantOK bool
	}{
		{"success", exitInfo{success: true, cpu: time.Hour}, "", false},
		{"output over", exitInfo{outputOver: true, signaled: true}, LimitOutput, true},
		{"deadline", exitInfo{ctxErr: context.DeadlineExceeded, signaled: true, cpu: time.Hour}, LimitDeadline, true},
		{"cancelled", exitInfo{ctxErr: context.Canceled, signaled: true}, "", false},
		{"told of its CPU limit", exitInfo{code: cpuLimitExit, cpu: 1600 * time.Millisecond}, LimitCPU, true},
		{"killed at its CPU limit", exitInfo{signaled: true, code: -1, cpu: 1900 * time.Millisecond}, LimitCPU, true},
		{"killed early", exitInfo{signaled: true, code: -1, cpu: time.Second}, "", false},
		{"out of memory", exitInfo{stderr: "fatal error: runtime: out of memory\n\ngoroutine 1"}, LimitMemory, true},
		{"no thread", exitInfo{stderr: "runtime: failed to create new OS thread"}, LimitMemory, true},
		{"other failure", exitInfo{stderr: "read render request: unexpected EOF"}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := classify(tc.exit, limits)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("classify = %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestRenderBudgetErrorMessage(t *testing.T) {
	limits := DefaultRenderLimits()
	for limit, want := range map[BudgetLimit]string{
		LimitMemory:   "chart c: rendering its templates was stopped at its memory limit of 128Mi",
		LimitCPU:      "chart c: rendering its templates was stopped at its cpu limit of 10s",
		LimitOutput:   "chart c: rendering its templates was stopped at its output limit of 32Mi of rendered files",
		LimitObjects:  "chart c: rendering its templates was stopped at its objects limit of 5000 objects",
		LimitDeadline: "chart c: rendering its templates did not finish before the operation's deadline and was stopped",
	} {
		if got := (&RenderBudgetError{Chart: "c", Limit: limit, Limits: limits}).Error(); got != want {
			t.Errorf("%s: %q, want %q", limit, got, want)
		}
	}
}

func TestCountDocuments(t *testing.T) {
	files := map[string]string{
		"c/templates/a.yaml":    "a: 1\n---\nb: 2\n---\n\n---\n# only a comment? counted\n",
		"c/templates/NOTES.txt": "a\n---\nb",
		"c/templates/empty":     "  \n",
		"c/templates/lead.yaml": "---\nx: 1",
	}
	if got := countDocuments(files); got != 4 {
		t.Errorf("countDocuments = %d, want 4", got)
	}
}

// TestRendererEnv: the renderer runs with the environment it is given, the C library's
// allocator held to one arena whatever the environment said.
func TestRendererEnv(t *testing.T) {
	got := rendererEnv([]string{"HOME=/home/berth", "MALLOC_ARENA_MAX=8", "PATH=/bin"})
	want := []string{"HOME=/home/berth", "PATH=/bin", "MALLOC_ARENA_MAX=1"}
	if !slices.Equal(got, want) {
		t.Errorf("rendererEnv: %q, want %q", got, want)
	}
}
