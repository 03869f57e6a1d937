package readiness

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func widgetChecks(t *testing.T) *Checks {
	t.Helper()
	c, err := CompileChecks([]HealthCheck{{
		APIVersion: "example.com/v1", Kind: "Widget",
		Current:    "self.status.phase == 'Ready'",
		Failed:     "status.phase == 'Broken'", // top-level fields by name, as Flux reads them
		InProgress: "has(self.status.paused) && self.status.paused",
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestHealthChecks(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       State
		expr       string
	}{
		{"no status yet", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}}`, InProgress, ""},
		{"current", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}, status: {phase: Ready}}`, Ready, "self.status.phase == 'Ready'"},
		{"failed", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}, status: {phase: Broken}}`, Failed, "status.phase == 'Broken'"},
		{"in progress first", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}, status: {phase: Ready, paused: true}}`, InProgress, "has(self.status.paused) && self.status.paused"},
		{"neither", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}, status: {phase: Starting}}`, InProgress, ""},
		{"generation not observed", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, generation: 2}, status: {observedGeneration: 1, phase: Ready}}`, InProgress, ""},
		{"generation observed", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, generation: 2}, status: {observedGeneration: 2, phase: Ready}}`, Ready, "self.status.phase == 'Ready'"},
		{"another version of the kind", `{apiVersion: example.com/v2, kind: Widget, metadata: {name: w}, status: {phase: Ready}}`, Ready, "self.status.phase == 'Ready'"},
		{"another kind: built-in rules", `{apiVersion: example.com/v1, kind: Gadget, metadata: {name: w}}`, Ready, ""},
	}
	checks := widgetChecks(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compute(obj(t, tt.yaml), Options{Checks: checks})
			if got.State != tt.want || got.Expression != tt.expr {
				t.Errorf("Compute = %s %q (%s), want %s %q", got.State, got.Expression, got.Message, tt.want, tt.expr)
			}
		})
	}
}

// TestHealthCheckOfAnyTopLevelField: a kind's top-level fields are whatever its kind has; an
// expression reads any of them by name, and type names stay types.
func TestHealthCheckOfAnyTopLevelField(t *testing.T) {
	c, err := CompileChecks([]HealthCheck{{APIVersion: "example.com/v1", Kind: "Widget",
		Current: "size(subsets) > 0 && type(subsets) == list && subsets.all(s, has(s.ready))"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		yaml string
		want State
	}{
		{`{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}, subsets: [{ready: true}]}`, Ready},
		{`{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}}`, InProgress},
	} {
		if got := Compute(obj(t, tt.yaml), Options{Checks: c}); got.State != tt.want {
			t.Errorf("Compute(%s) = %s (%s), want %s", tt.yaml, got.State, got.Message, tt.want)
		}
	}
}

func TestHealthCheckThatIsNotABool(t *testing.T) {
	c, err := CompileChecks([]HealthCheck{{APIVersion: "example.com/v1", Kind: "Widget", Current: "self.status.phase"}})
	if err != nil {
		t.Fatal(err)
	}
	got := Compute(obj(t, `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}, status: {phase: Ready}}`), Options{Checks: c})
	if got.State != InProgress || !strings.Contains(got.Message, "not a bool") {
		t.Errorf("Compute = %s (%s), want in progress, saying the result is not a bool", got.State, got.Message)
	}
}

func TestCompileChecksErrors(t *testing.T) {
	valid := HealthCheck{APIVersion: "example.com/v1", Kind: "Widget", Current: "true"}
	tests := []struct {
		name   string
		checks []HealthCheck
		index  int
		field  string
		expr   string
	}{
		{"no apiVersion", []HealthCheck{{Kind: "Widget", Current: "true"}}, 0, "apiVersion", ""},
		{"no version", []HealthCheck{{APIVersion: "example.com/", Kind: "Widget", Current: "true"}}, 0, "apiVersion", ""},
		{"no kind", []HealthCheck{{APIVersion: "example.com/v1", Current: "true"}}, 0, "kind", ""},
		{"no current", []HealthCheck{{APIVersion: "example.com/v1", Kind: "Widget"}}, 0, "current", ""},
		{"twice", []HealthCheck{valid, valid}, 1, "kind", ""},
		{"current not CEL", []HealthCheck{valid, {APIVersion: "example.com/v1", Kind: "Gadget", Current: "self.status.phase =="}}, 1, "current", "self.status.phase =="},
		{"failed not CEL", []HealthCheck{{APIVersion: "example.com/v1", Kind: "Widget", Current: "true", Failed: "self.status.(phase"}}, 0, "failed", "self.status.(phase"},
		{"inProgress not CEL", []HealthCheck{{APIVersion: "example.com/v1", Kind: "Widget", Current: "true", InProgress: "'unterminated"}}, 0, "inProgress", "'unterminated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CompileChecks(tt.checks)
			var ce *CheckError
			if !errors.As(err, &ce) {
				t.Fatalf("CompileChecks = %v, want a *CheckError", err)
			}
			if ce.Index != tt.index || ce.Field != tt.field || ce.Expression != tt.expr {
				t.Errorf("CompileChecks = %q (check %d, %s, %q), want check %d, %s, %q", err, ce.Index, ce.Field, ce.Expression, tt.index, tt.field, tt.expr)
			}
		})
	}
}

func TestCompileNoChecks(t *testing.T) {
	c, err := CompileChecks(nil)
	if err != nil || c != nil {
		t.Fatalf("CompileChecks(nil) = %v, %v, want nil, nil", c, err)
	}
	if got := Compute(obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}`), Options{Checks: c}); got.State != Ready {
		t.Errorf("Compute with nil checks = %s (%s), want Ready", got.State, got.Message)
	}
}

// TestPrecedence: the object's annotations first, then the health check of its kind, then the
// built-in rules.
func TestPrecedence(t *testing.T) {
	checks := widgetChecks(t)
	tests := []struct {
		name, status string
		annotations  []string
		want         State
		expr         string
	}{
		{name: "annotation over health check", status: `{phase: Ready}`,
			annotations: []string{AnnotationSuccess, `["{.status.phase} == \"Done\""]`}, want: InProgress},
		{name: "annotation ready where health check is not", status: `{phase: Done}`,
			annotations: []string{AnnotationSuccess, `["{.status.phase} == \"Done\""]`}, want: Ready, expr: `{.status.phase} == "Done"`},
		{name: "failure annotation over a ready health check", status: `{phase: Ready, errors: 2}`,
			annotations: []string{AnnotationFailure, `["{.status.errors} > 1"]`}, want: Failed, expr: `{.status.errors} > 1`},
		{name: "failure annotation alone, then health check", status: `{phase: Starting}`,
			annotations: []string{AnnotationFailure, `["{.status.errors} > 1"]`}, want: InProgress},
		{name: "health check over built-in", status: `{phase: Starting, conditions: [{type: Ready, status: "True"}]}`, want: InProgress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compute(widget(t, tt.status, tt.annotations...), Options{Checks: checks})
			if got.State != tt.want || got.Expression != tt.expr {
				t.Errorf("Compute = %s %q (%s), want %s %q", got.State, got.Expression, got.Message, tt.want, tt.expr)
			}
		})
	}
	// Without the health check, the built-in rules judge the same object Ready.
	if got := Compute(widget(t, `{phase: Starting, conditions: [{type: Ready, status: "True"}]}`), Options{}); got.State != Ready {
		t.Errorf("Compute without checks = %s (%s), want Ready", got.State, got.Message)
	}
}

func TestRollout(t *testing.T) {
	tests := []struct {
		name, status string
		generation   int
		want         State
	}{
		{"no status", "", 1, InProgress},
		{"progressing", `{phase: Progressing, message: more replicas need to be updated}`, 1, InProgress},
		{"paused", `{phase: Paused, message: CanaryPauseStep}`, 1, InProgress},
		{"healthy", `{phase: Healthy, observedGeneration: "1"}`, 1, Ready},
		{"healthy, generation as a number", `{phase: Healthy, observedGeneration: 3}`, 3, Ready},
		{"healthy, old generation", `{phase: Healthy, observedGeneration: "1"}`, 2, InProgress},
		{"healthy, observedGeneration a hash", `{phase: Healthy, observedGeneration: 5d8c7f6b9}`, 2, Ready},
		{"degraded", `{phase: Degraded, message: "ProgressDeadlineExceeded: timed out"}`, 1, Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := "{apiVersion: argoproj.io/v1alpha1, kind: Rollout, metadata: {name: r, generation: " + strconv.Itoa(tt.generation) + "}"
			if tt.status != "" {
				y += ", status: " + tt.status
			}
			got := Compute(obj(t, y+"}"), Options{})
			if got.State != tt.want || got.Message == "" {
				t.Errorf("Compute = %s (%s), want %s", got.State, got.Message, tt.want)
			}
		})
	}
}

// TestBerthRelease: a Release of berth controller is ready once Ready for its generation, failed
// once Stalled for it, in progress before its controller wrote any status and while it works.
func TestBerthRelease(t *testing.T) {
	tests := []struct {
		name, status string
		want         State
	}{
		{"no status", "", InProgress},
		{"reconciling", `{observedGeneration: 2, conditions: [{type: Ready, status: Unknown, reason: Progressing, observedGeneration: 2}, {type: Reconciling, status: "True", observedGeneration: 2}]}`, InProgress},
		{"ready", `{observedGeneration: 2, conditions: [{type: Ready, status: "True", reason: UpgradeSucceeded, observedGeneration: 2}]}`, Ready},
		{"ready, an older generation", `{observedGeneration: 1, conditions: [{type: Ready, status: "True", observedGeneration: 1}]}`, InProgress},
		{"failed, to be retried", `{observedGeneration: 2, conditions: [{type: Ready, status: "False", reason: UpgradeFailed, observedGeneration: 2}]}`, InProgress},
		{"stalled", `{observedGeneration: 2, conditions: [{type: Ready, status: "False", reason: UpgradeFailed, observedGeneration: 2}, {type: Stalled, status: "True", reason: RetriesExhausted, message: 3 attempts failed, observedGeneration: 2}]}`, Failed},
		{"stalled, an older generation", `{observedGeneration: 1, conditions: [{type: Stalled, status: "True", observedGeneration: 1}]}`, InProgress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := "{apiVersion: berth.dev/v1alpha1, kind: Release, metadata: {name: web, generation: 2}"
			if tt.status != "" {
				y += ", status: " + tt.status
			}
			got := Compute(obj(t, y+"}"), Options{})
			if got.State != tt.want || got.Message == "" {
				t.Errorf("Compute = %s (%s), want %s", got.State, got.Message, tt.want)
			}
		})
	}
}

// TestBuiltinIgnoresAnnotations: hooks are judged by the built-in rules alone.
func TestBuiltinIgnoresAnnotations(t *testing.T) {
	job := obj(t, `{apiVersion: batch/v1, kind: Job, metadata: {name: j, annotations: {helm.sh/readiness-failure: '["{.status.active} >= 1"]'}}, status: {active: 1}}`)
	if got := Builtin(job, Options{WaitForJobs: true}); got.State != InProgress {
		t.Errorf("Builtin = %s (%s), want the Job in progress", got.State, got.Message)
	}
	if got := Compute(job, Options{WaitForJobs: true}); got.State != Failed {
		t.Errorf("Compute = %s (%s), want the Job failed by its annotation", got.State, got.Message)
	}
}
