package readiness

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestMatchesBudget: a matches whose pattern compiles to more than MaxRegexProgram instructions,
// or does not parse, is refused by name before anything is estimated; one whose cost on the
// largest string is over the estimate's limit is refused as too costly; a pattern a health check
// uses, on a field, is allowed.
func TestMatchesBudget(t *testing.T) {
	tests := []struct {
		name, expr string
		want       error
	}{
		{"a name's pattern", "self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')", nil},
		{"a condition's status", "matches(self.status.phase, '^(Ready|Succeeded)$')", nil},
		{"a version", "self.status.version.matches('^v[0-9]+\\\\.[0-9]+\\\\.[0-9]+$')", nil},
		{"a pattern from the object on a literal", "'ready'.matches(self.data.y)", nil},
		{"a pattern of thousands of instructions", "self.data.x.matches('(a|b){1000}c')", &RegexError{}},
		{"nested repeats", "self.data.x.matches('((a{100}){100}){100}')", &RegexError{}},
		{"a pattern that does not parse", "self.data.x.matches('(')", &RegexError{}},
		{"500 instructions on the largest string", "self.data.x.matches('[ab]*a[ab]{500}c')", &CostError{}},
		{"a pattern from the object", "self.data.x.matches(self.data.y)", &CostError{}},
		{"in a loop over a list", "self.spec.items.exists(i, i.matches('^[a-z]+$'))", &CostError{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CompileChecks([]HealthCheck{{APIVersion: "example.com/v1", Kind: "Widget", Current: tt.expr}})
			switch tt.want.(type) {
			case nil:
				if err != nil {
					t.Errorf("CompileChecks = %v, want it compiled", err)
				}
			case *RegexError:
				var re *RegexError
				if !errors.As(err, &re) || re.Max != MaxRegexProgram || !strings.Contains(err.Error(), "regular expression") {
					t.Errorf("CompileChecks = %v, want a *RegexError", err)
				}
			case *CostError:
				var cost *CostError
				if !errors.As(err, &cost) || cost.Estimated <= EstimatedCostLimit {
					t.Errorf("CompileChecks = %v, want a *CostError", err)
				}
			}
		})
	}
}

// TestRegexProgram: the size of a pattern's program is counted as Go's regexp compiles it, and
// a pattern whose program would be large is refused before it is expanded.
func TestRegexProgram(t *testing.T) {
	tests := []struct {
		pattern string
		max     int // the most instructions it may have; 0 for refused
	}{
		{"^True$", 10},
		{"[0-9]+\\.[0-9]+", 12},
		{"(a|b){1000}", 0},
		{"(abcdefghij){1000}", 0},
		{"((ab{10}){10}){10}", 0},
		{"x{1000}", 0},
		{strings.Repeat("a", maxPatternLength+1), 0},
		{"[ab]*a[ab]{300}c", MaxRegexProgram},
	}
	for _, tt := range tests {
		n, err := regexProgram(tt.pattern)
		switch {
		case tt.max == 0 && !errors.Is(err, ErrRegexTooLarge):
			t.Errorf("regexProgram(%.40s) = %d, %v, want ErrRegexTooLarge", tt.pattern, n, err)
		case tt.max > 0 && (err != nil || n > tt.max):
			t.Errorf("regexProgram(%.40s) = %d, %v, want at most %d", tt.pattern, n, err, tt.max)
		}
	}
}

// TestMatchesEvaluationBudget: a matches that would cost more than CostLimit on the object's
// string is refused before it runs; a pattern from the object that is too large is refused
// before it is compiled; a small pattern on a large string runs.
func TestMatchesEvaluationBudget(t *testing.T) {
	large := strings.Repeat("ab", 128<<10) // 256 KiB
	tests := []struct {
		name, expr string
		data       map[string]any
		wantErr    error // nil: true
	}{
		{"a costly pattern on 256 KiB", "self.data.x.matches('[ab]*a[ab]{200}c')", map[string]any{"x": large}, ErrTooCostly},
		{"a pattern from the object", "'ab'.matches(self.data.y)", map[string]any{"y": "(a|b){1000}"}, ErrRegexTooLarge},
		{"a long pattern from the object", "'ab'.matches(self.data.y)", map[string]any{"y": strings.Repeat("a", 4096)}, ErrRegexTooLarge},
		{"a small pattern on 256 KiB", "self.data.x.matches('^ab')", map[string]any{"x": large}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := CompileChecks([]HealthCheck{{APIVersion: "v1", Kind: "ConfigMap", Current: tt.expr}})
			if err != nil {
				t.Fatal(err)
			}
			ch, _ := c.lookup(configMap(nil).GroupVersionKind())
			ok, err := ch.current.holds(map[string]any{"self": configMap(tt.data).Object})
			switch {
			case tt.wantErr == nil && (!ok || err != nil):
				t.Errorf("holds = %v, %v, want true", ok, err)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("holds = %v, %v, want %v", ok, err, tt.wantErr)
			}
		})
	}
	got := Compute(configMap(map[string]any{"x": large}), Options{Checks: mustCompile(t, "self.data.x.matches('[ab]*a[ab]{200}c')")})
	if !strings.HasSuffix(got.Message, "("+string(FailureCost)+")") {
		t.Errorf("Compute = %q, want it to say %s", got.Message, FailureCost)
	}
}

func mustCompile(t testing.TB, expr string) *Checks {
	t.Helper()
	c, err := CompileChecks([]HealthCheck{{APIVersion: "v1", Kind: "ConfigMap", Current: expr}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// BenchmarkMatchesWorstAllowed evaluates matches at the most it is allowed to cost: patterns
// that keep one RE2 thread alive per instruction ([ab]*a[ab]{K}c), each on the longest string
// of a and b whose cost is within CostLimit, so that no match is found and every byte is read.
func BenchmarkMatchesWorstAllowed(b *testing.B) {
	for _, k := range []int{5, 50, 300} {
		pattern := fmt.Sprintf("[ab]*a[ab]{%d}c", k)
		size, err := regexProgram(pattern)
		if err != nil {
			b.Fatal(err)
		}
		// A hundred units left for the rest of the expression.
		length := ((CostLimit-100)/size - 1) * 10
		c := mustCompile(b, fmt.Sprintf("self.data.x.matches('%s') == false", pattern))
		obj := configMap(map[string]any{"x": strings.Repeat("ab", length/2)})
		b.Run(fmt.Sprintf("%d instructions on %d KiB", size, length>>10), func(b *testing.B) {
			for b.Loop() {
				if got := Compute(obj, Options{Checks: c}); got.State != Ready {
					b.Fatalf("Compute = %s (%s), want it evaluated", got.State, got.Message)
				}
			}
		})
	}
}
