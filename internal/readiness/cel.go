package readiness

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
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

// TooLongError says an expression is longer than MaxExpressionLength.
type TooLongError struct{ Length, Max int }

func (e *TooLongError) Error() string {
	return fmt.Sprintf("is %d bytes long, more than the %d allowed", e.Length, e.Max)
}

// TooManyError says there are more health checks, or expressions of an annotation, than
// allowed.
type TooManyError struct {
	// What is counted: "health checks" or "expressions".
	What       string
	Count, Max int
}

func (e *TooManyError) Error() string {
	return fmt.Sprintf("%d %s, more than the %d allowed", e.Count, e.What, e.Max)
}

// CostError says the estimated cost of an expression, on an object of the largest size, is
// more than EstimatedCostLimit.
type CostError struct{ Estimated, Limit uint64 }

func (e *CostError) Error() string {
	return fmt.Sprintf("has an estimated cost of %d, more than the limit of %d", e.Estimated, e.Limit)
}

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
	// cost is the estimated cost, at most EstimatedCostLimit.
	cost uint64
}

// typeNames are CEL's own names of types, which an expression may name (type(x) == int) and
// which are never an object's fields.
var typeNames = map[string]bool{
	"int": true, "uint": true, "double": true, "bool": true, "string": true, "bytes": true,
	"list": true, "map": true, "null_type": true, "type": true, "dyn": true, "optional_type": true,
}

// newEnv is the environment expressions are checked in: self is a map of the object's fields;
// the top-level fields an expression reads by name are declared by withFields.
func newEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.CrossTypeNumericComparisons(true),
		cel.DefaultUTCTimeZone(true),
		cel.OptionalTypes(),
		ext.Strings(),
		cel.Variable("self", cel.MapType(cel.StringType, cel.DynType)),
	)
}

// withFields is env with each name an expression reads that env does not declare (status for
// self.status, as Flux reads them) declared as a field of the object, of any type: an object's
// top-level fields depend on its kind, so they are known only from what the expression reads.
// A field the object lacks is then an evaluation's "no such attribute", not a type error.
func withFields(env *cel.Env, parsed *cel.Ast) (*cel.Env, error) {
	seen := map[string]bool{"self": true}
	var vars []cel.EnvOption
	celast.PreOrderVisit(parsed.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() != celast.IdentKind {
			return
		}
		name := e.AsIdent()
		if seen[name] || typeNames[name] {
			return
		}
		seen[name] = true
		vars = append(vars, cel.Variable(name, cel.DynType))
	}))
	if len(vars) == 0 {
		return env, nil
	}
	return env.Extend(vars...)
}

// CompileChecks compiles health checks, and returns a *CheckError for the first that cannot be
// used: without apiVersion, kind or current, given twice for a kind, or with an expression that
// is not CEL, does not type-check, is longer than MaxExpressionLength (a *TooLongError), spells
// out a pattern of matches that does not parse or compiles to more than MaxRegexProgram
// instructions (a *RegexError), or whose estimated cost is more than EstimatedCostLimit (a
// *CostError); a *TooManyError for more than MaxChecks. Nothing is evaluated.
func CompileChecks(in []HealthCheck) (*Checks, error) {
	if len(in) == 0 {
		return nil, nil
	}
	if len(in) > MaxChecks {
		return nil, &TooManyError{What: "health checks", Count: len(in), Max: MaxChecks}
	}
	env, err := newEnv()
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

// compile parses, type-checks and estimates text, and makes a program that stops at CostLimit
// and refuses to build strings beyond the budget.
func compile(env *cel.Env, text string) (*celExpression, error) {
	if len(text) > MaxExpressionLength {
		return nil, &TooLongError{Length: len(text), Max: MaxExpressionLength}
	}
	parsed, iss := env.Parse(text)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	env, err := withFields(env, parsed)
	if err != nil {
		return nil, err
	}
	ast, iss := env.Check(parsed)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if err := checkRegexes(ast); err != nil {
		return nil, err
	}
	est, err := env.EstimateCost(ast, costEstimator{})
	if err != nil {
		return nil, fmt.Errorf("estimating its cost: %w", err)
	}
	if est.Max > EstimatedCostLimit {
		return nil, &CostError{Estimated: est.Max, Limit: EstimatedCostLimit}
	}
	prog, err := program(env, ast)
	if err != nil {
		return nil, err
	}
	return &celExpression{text: text, prog: prog, cost: est.Max}, nil
}

// program is ast's program: it refuses to build strings beyond the budget, stops once it spent
// CostLimit, and checks for its deadline as it loops.
func program(env *cel.Env, ast *cel.Ast) (cel.Program, error) {
	return env.Program(ast,
		cel.CustomDecorator(guard(env)),
		cel.CostTracking(costTracker{}),
		cel.CostLimit(CostLimit),
		cel.InterruptCheckFrequency(interruptEvery),
	)
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
		// The failure's kind alone: cel-go's words can quote the object's values.
		msg += " (" + string(failureOf(err)) + ")"
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

// holds evaluates e with vars within EvalTimeout; an error says why it could not be.
func (e *celExpression) holds(vars map[string]any) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), EvalTimeout)
	defer cancel()
	out, _, err := e.prog.ContextEval(ctx, vars)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, errNotABool
	}
	return bool(b), nil
}

var errNotABool = errors.New("not a bool")

// Failure is the kind of an evaluation's failure: all that is said of it, as cel-go's own words
// can quote the values of the object (a missing key of a map is given by its value).
type Failure string

const (
	FailureNoSuchKey    Failure = "no such key"
	FailureNoSuchField  Failure = "no such field"
	FailureTypeMismatch Failure = "type mismatch"
	FailureNotABool     Failure = "result is not a bool"
	FailureCost         Failure = "cost limit exceeded"
	FailureTimeout      Failure = "timed out"
	FailureTooLarge     Failure = "result too large"
	FailureRegex        Failure = "regular expression too large"
	FailureDivision     Failure = "division by zero"
	FailureRange        Failure = "index out of range"
	FailureOther        Failure = "evaluation error"
)

// failureOf is the kind of err, an error of an evaluation.
func failureOf(err error) Failure {
	var cancelled interpreter.EvalCancelledError
	switch {
	case errors.Is(err, errNotABool):
		return FailureNotABool
	case errors.Is(err, ErrTooLarge):
		return FailureTooLarge
	case errors.Is(err, ErrRegexTooLarge):
		return FailureRegex
	case errors.Is(err, ErrTooCostly):
		return FailureCost
	case errors.As(err, &cancelled):
		if cancelled.Cause == interpreter.CostLimitExceeded {
			return FailureCost
		}
		return FailureTimeout
	}
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "no such key"):
		return FailureNoSuchKey
	case strings.Contains(msg, "no such attribute"), strings.Contains(msg, "no such field"):
		return FailureNoSuchField
	case strings.Contains(msg, "overload"), strings.Contains(msg, "type conversion error"):
		return FailureTypeMismatch
	case strings.Contains(msg, "cost limit exceeded"):
		return FailureCost
	case strings.Contains(msg, "interrupted"), strings.Contains(msg, "cancelled"):
		return FailureTimeout
	case strings.Contains(msg, "division by zero"), strings.Contains(msg, "modulus by zero"):
		return FailureDivision
	case strings.Contains(msg, "out of range"):
		return FailureRange
	}
	return FailureOther
}
