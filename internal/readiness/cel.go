package readiness

import (
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// HealthCheck is the readiness of the objects of one kind, in CEL expressions over the object,
// in the shape of Flux's healthCheckExprs: for a chart that does not annotate its objects.
// Each expression reads the object as self, and its top-level fields by name (status, as Flux
// reads them, is self.status).
type HealthCheck struct {
	// APIVersion and Kind are the kind's, as in a manifest (example.com/v1, Widget).
	APIVersion, Kind string
	// Current says the object is ready; required.
	Current string
	// InProgress, when true, says the object is not ready yet, whatever the others say.
	InProgress string
	// Failed says the object failed.
	Failed string
}

// CheckError says a health check cannot be used.
type CheckError struct {
	// Index is the check's among those compiled.
	Index int
	// Field is the field at fault: apiVersion, kind, current, inProgress or failed.
	Field string
	// Expression is the expression at fault, if an expression is.
	Expression string
	Err        error
}

func (e *CheckError) Error() string {
	if e.Expression == "" {
		return fmt.Sprintf("health check %d: %s: %v", e.Index, e.Field, e.Err)
	}
	return fmt.Sprintf("health check %d: %s: expression %s: %v", e.Index, e.Field, e.Expression, e.Err)
}

func (e *CheckError) Unwrap() error { return e.Err }

// Checks are compiled health checks, by kind. The nil Checks has none.
type Checks struct {
	byKind map[schema.GroupKind][]check
}

type check struct {
	version                     string
	inProgress, failed, current *celExpression
}

type celExpression struct {
	text string
	prog cel.Program
}

// costLimit bounds the work of one evaluation: a health check is evaluated on every change of
// every object of its kind while an operation waits.
const costLimit = 1_000_000

// CompileChecks compiles health checks, and returns a *CheckError for the first that cannot be
// used: without apiVersion, kind or current, given twice for a kind, or with an expression that
// is not CEL.
func CompileChecks(in []HealthCheck) (*Checks, error) {
	if len(in) == 0 {
		return nil, nil
	}
	// The expressions are parsed, not type-checked: an object's fields are not declared (not
	// every kind has the usual top-level ones), so they are only known as they are evaluated.
	env, err := cel.NewEnv(
		cel.CrossTypeNumericComparisons(true),
		cel.DefaultUTCTimeZone(true),
		cel.OptionalTypes(),
		ext.Strings(),
	)
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	c := &Checks{byKind: map[schema.GroupKind][]check{}}
	seen := map[schema.GroupVersionKind]int{}
	for i, hc := range in {
		gv, err := schema.ParseGroupVersion(hc.APIVersion)
		switch {
		case hc.APIVersion == "" || gv.Version == "":
			return nil, &CheckError{Index: i, Field: "apiVersion", Err: fmt.Errorf("want a group and version, like example.com/v1, not %q", hc.APIVersion)}
		case err != nil:
			return nil, &CheckError{Index: i, Field: "apiVersion", Err: err}
		case hc.Kind == "":
			return nil, &CheckError{Index: i, Field: "kind", Err: fmt.Errorf("is required")}
		case hc.Current == "":
			return nil, &CheckError{Index: i, Field: "current", Err: fmt.Errorf("is required")}
		}
		gvk := gv.WithKind(hc.Kind)
		if j, ok := seen[gvk]; ok {
			return nil, &CheckError{Index: i, Field: "kind", Err: fmt.Errorf("%s %s has a health check already, at index %d", hc.APIVersion, hc.Kind, j)}
		}
		seen[gvk] = i
		ch := check{version: gv.Version}
		for _, f := range []struct {
			field, text string
			into        **celExpression
		}{{"current", hc.Current, &ch.current}, {"inProgress", hc.InProgress, &ch.inProgress}, {"failed", hc.Failed, &ch.failed}} {
			if f.text == "" {
				continue
			}
			e, err := compile(env, f.text)
			if err != nil {
				return nil, &CheckError{Index: i, Field: f.field, Expression: f.text, Err: err}
			}
			*f.into = e
		}
		c.byKind[gvk.GroupKind()] = append(c.byKind[gvk.GroupKind()], ch)
	}
	return c, nil
}

func compile(env *cel.Env, text string) (*celExpression, error) {
	ast, iss := env.Parse(text)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	prog, err := env.Program(ast, cel.CostLimit(costLimit))
	if err != nil {
		return nil, err
	}
	return &celExpression{text: text, prog: prog}, nil
}

// evaluate is obj's readiness by the health check of its kind, and whether there is one. As in
// Flux, an object whose status says its controller has not observed its generation yet is in
// progress; then inProgress, failed and current are evaluated in this order, and the first that
// is true decides; none: in progress. An expression that cannot be evaluated (a field the
// object does not have yet, a result that is not a bool) is not true.
func (c *Checks) evaluate(obj *unstructured.Unstructured) (Result, bool) {
	if c == nil {
		return Result{}, false
	}
	ch, ok := c.lookup(obj.GroupVersionKind())
	if !ok {
		return Result{}, false
	}
	if gen, ok := unobserved(obj); ok {
		return Result{State: InProgress, Message: fmt.Sprintf("generation %d not observed yet", gen)}, true
	}
	vars := make(map[string]any, len(obj.Object)+1)
	for k, v := range obj.Object {
		vars[k] = v
	}
	vars["self"] = obj.Object
	if ch.inProgress != nil {
		if ok, _ := ch.inProgress.holds(vars); ok {
			return Result{State: InProgress, Message: fmt.Sprintf("health check inProgress: %s is true", ch.inProgress.text), Expression: ch.inProgress.text}, true
		}
	}
	if ch.failed != nil {
		if ok, _ := ch.failed.holds(vars); ok {
			return Result{State: Failed, Message: fmt.Sprintf("health check failed: %s is true", ch.failed.text), Expression: ch.failed.text}, true
		}
	}
	ok, err := ch.current.holds(vars)
	if ok {
		return Result{State: Ready, Message: fmt.Sprintf("health check current: %s is true", ch.current.text), Expression: ch.current.text}, true
	}
	msg := "waiting for health check current: " + ch.current.text
	if err != nil {
		msg += " (" + err.Error() + ")"
	}
	return Result{State: InProgress, Message: msg}, true
}

// lookup returns the check of gvk's kind: the one of its version, else the one of another
// version of its group (the wait may read the object at a version other than the chart's).
func (c *Checks) lookup(gvk schema.GroupVersionKind) (check, bool) {
	checks := c.byKind[gvk.GroupKind()]
	for _, ch := range checks {
		if ch.version == gvk.Version {
			return ch, true
		}
	}
	if len(checks) > 0 {
		return checks[0], true
	}
	return check{}, false
}

// holds evaluates e with vars; an error says why it could not be.
func (e *celExpression) holds(vars map[string]any) (bool, error) {
	out, _, err := e.prog.Eval(vars)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("evaluates to %s, not a bool", out.Type().TypeName())
	}
	return bool(b), nil
}
