package readiness

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/functions"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// The budget of a health check's expression. A Release's author writes it and the controller
// evaluates it on every change of every object of its kind, for every tenant at once: what one
// evaluation may take is bounded before the first, and again as it runs.
const (
	// MaxExpressionLength is the length, in bytes, of the longest expression: a health check
	// reads a field or two of the object, in well under 200 characters; 1024 leaves room for
	// a long one and bounds what the parser and checker read. The CRD says the same.
	MaxExpressionLength = 1024
	// MaxChecks is the most health checks compiled together: one a kind of a chart.
	MaxChecks = 64
	// CostLimit is the most one evaluation may cost, in cel-go's units (about one unit per
	// operation, a tenth of a unit per byte of a string read or built): it stops as soon as it
	// has spent it. Strings are built at most 10 bytes a unit, so an evaluation allocates
	// some ten megabytes at most.
	CostLimit = 1_000_000
	// EstimatedCostLimit is the most an expression's cost may be estimated at when it is
	// compiled. The estimate is for an object of the largest size, whose every list and
	// string is as long as that size allows (a list of conditions of a million items): a
	// check with a loop over a list is estimated in the tens of millions, one that would
	// build gigabytes or loops within loops in the billions.
	EstimatedCostLimit = 100 * CostLimit
	// EvalTimeout bounds one evaluation in time, whatever its cost says.
	EvalTimeout = 100 * time.Millisecond
	// maxObjectSize is the size of the largest object the API server stores (its request
	// limit, 3 MiB): no string or list of an object is larger, and the estimate of a cost
	// takes every value of the object to be that large.
	maxObjectSize = 3 << 20
	// maxStringSize is the largest string a function may build: no larger than an object.
	maxStringSize = maxObjectSize
	// maxSplitItems is the longest list split may build (each item takes 32 bytes or so).
	maxSplitItems = 1 << 16
	// stringCostFactor is cel-go's cost of a byte of a string read or built.
	stringCostFactor = 0.1
	// listItemCost is the cost of an item of a list a function builds.
	listItemCost = 4
	// interruptEvery is how many iterations of a comprehension pass between checks of the
	// evaluation's deadline.
	interruptEvery = 100
)

// ErrTooLarge says a function would build a value larger than the budget allows; it is
// returned before the value is built.
var ErrTooLarge = errors.New("result too large")

// costEstimator estimates, before any evaluation, what an expression costs on an object of the
// largest size: every value the expression does not spell out is taken to be that large, and
// the string functions cost the bytes they read and build, as Kubernetes' CEL library counts
// them. A function's result is not taken to be capped (as guard caps it as it runs): an
// expression that would build more than maxStringSize is one to refuse.
type costEstimator struct{}

func (costEstimator) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return &checker.SizeEstimate{Min: 0, Max: maxObjectSize}
}

func (costEstimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	if function == "matches" {
		return estimateMatches(target, args)
	}
	if target == nil {
		return nil
	}
	sz := sizeOf(*target)
	switch function {
	case "charAt", "indexOf", "lastIndexOf", "substring", "trim", "lowerAscii", "upperAscii", "reverse":
		return &checker.CallEstimate{CostEstimate: traversal(sz.Max), ResultSize: &sz}
	case "replace":
		if len(args) < 2 {
			return nil
		}
		old, repl := sizeOf(args[0]), sizeOf(args[1])
		var result uint64
		switch {
		case old.Min == 0:
			// An empty old string is replaced before every character and at the end.
			result = addSat(sz.Max, mulSat(addSat(sz.Max, 1), repl.Max))
		case repl.Max <= old.Min:
			result = sz.Max
		default:
			result = mulSat(sz.Max/old.Min+1, repl.Max)
		}
		return &checker.CallEstimate{CostEstimate: traversal(addSat(sz.Max, result)), ResultSize: &checker.SizeEstimate{Max: result}}
	case "split":
		items := min(addSat(sz.Max, 1), maxSplitItems)
		return &checker.CallEstimate{
			CostEstimate: traversal(sz.Max).Add(checker.CostEstimate{Max: mulSat(items, listItemCost)}),
			ResultSize:   &checker.SizeEstimate{Max: items},
		}
	case "join":
		// The items' sizes are not known: together, as large as an object.
		return &checker.CallEstimate{CostEstimate: traversal(maxObjectSize), ResultSize: &checker.SizeEstimate{Max: maxObjectSize}}
	}
	return nil
}

// estimateMatches is the cost of s.matches(pattern) (or matches(s, pattern)) on the longest s:
// matchesCost of the size of pattern's program when the expression spells it out (checkRegexes
// refused it if it is over MaxRegexProgram), else of MaxRegexProgram, beyond which it is refused
// as it runs.
func estimateMatches(target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	if target == nil {
		if len(args) != 2 {
			return nil
		}
		target, args = &args[0], args[1:]
	}
	if len(args) != 1 {
		return nil
	}
	size := MaxRegexProgram
	if pattern, ok := literalString(args[0].Expr()); ok {
		if n, err := regexProgram(pattern); err == nil {
			size = n
		}
	}
	return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: matchesCost(sizeOf(*target).Max, size)}}
}

func sizeOf(n checker.AstNode) checker.SizeEstimate {
	if s := n.ComputedSize(); s != nil {
		return *s
	}
	return checker.SizeEstimate{Max: maxObjectSize}
}

func traversal(n uint64) checker.CostEstimate {
	return checker.CostEstimate{Min: 1, Max: addSat(uint64(math.Ceil(float64(n)*stringCostFactor)), 1)}
}

func addSat(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

func mulSat(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}

// costTracker charges, as an evaluation runs, the string functions by the bytes they read and
// build and the items of the lists they build (cel-go charges them one unit a call), and
// matches by matchesCost, as estimated.
type costTracker struct{}

func (costTracker) CallCost(function, _ string, args []ref.Val, result ref.Val) *uint64 {
	var n uint64
	switch function {
	case "charAt", "indexOf", "lastIndexOf", "substring", "trim", "lowerAscii", "upperAscii", "reverse", "replace", "join":
		n = 1 + uint64(math.Ceil(float64(valueSize(args...)+valueSize(result))*stringCostFactor))
	case "split":
		n = 1 + uint64(math.Ceil(float64(valueSize(args...))*stringCostFactor)) + listItemCost*valueSize(result)
	case "matches":
		// A call guard refused, before it ran, cost nothing: its error says why.
		if len(args) != 2 || types.IsError(result) {
			return nil
		}
		pattern, _ := args[1].(types.String)
		size, err := regexProgram(string(pattern))
		if err != nil {
			return nil
		}
		n = matchesCost(valueSize(args[0]), size)
	default:
		return nil
	}
	return &n
}

// valueSize is the size of strings (their bytes) and lists (their items) among vals.
func valueSize(vals ...ref.Val) uint64 {
	var n uint64
	for _, v := range vals {
		switch v := v.(type) {
		case types.String:
			n += uint64(len(v))
		case traits.Lister:
			if s, ok := v.Size().(types.Int); ok && s > 0 {
				n += uint64(s)
			}
		}
	}
	return n
}

// guard is a decorator of the program that checks, before a string function builds its result,
// that the result is within maxStringSize (or, for split, maxSplitItems), and before matches
// runs, that its pattern and cost are within the budget (matchesWithin): cel-go charges a call
// only once it returned, too late for one that builds gigabytes or matches for seconds.
// Functions whose result cannot be bounded so (format, strings.quote) are refused.
func guard(env *cel.Env) interpreter.InterpretableDecorator {
	return func(i interpreter.Interpretable) (interpreter.Interpretable, error) {
		call, ok := i.(interpreter.InterpretableCall)
		if !ok {
			return i, nil
		}
		var bound func(args []ref.Val) error
		switch call.Function() {
		case "format", "strings.quote":
			return nil, fmt.Errorf("%s is not available in a health check: what it builds has no bound", call.Function())
		case "replace":
			bound = within(replaceWithin)
		case "join":
			bound = within(joinWithin)
		case "split":
			bound = within(splitWithin)
		case "matches":
			bound = matchesWithin
		default:
			return i, nil
		}
		impl, err := implementation(env, call)
		if err != nil {
			return nil, err
		}
		guarded := func(args ...ref.Val) ref.Val {
			if err := bound(args); err != nil {
				return types.WrapErr(fmt.Errorf("%s: %w", call.Function(), err))
			}
			return impl(args...)
		}
		return interpreter.NewCall(call.ID(), call.Function(), call.OverloadID(), call.Args(), guarded), nil
	}
}

// within is ErrTooLarge when bound says a call's result is larger than the budget allows.
func within(bound func(args []ref.Val) bool) func(args []ref.Val) error {
	return func(args []ref.Val) error {
		if !bound(args) {
			return ErrTooLarge
		}
		return nil
	}
}

// implementation is the function the call runs: its overload's, or the function's dispatch
// between overloads when the type check left several.
func implementation(env *cel.Env, call interpreter.InterpretableCall) (func(...ref.Val) ref.Val, error) {
	fn, ok := env.Functions()[call.Function()]
	if !ok {
		return nil, fmt.Errorf("function %s is not declared", call.Function())
	}
	bindings, err := fn.Bindings()
	if err != nil {
		return nil, err
	}
	// The overload's own binding, else the function's, which dispatches between its overloads
	// (matches has one for both of its forms).
	var b *functions.Overload
	for _, name := range []string{call.OverloadID(), call.Function()} {
		for _, o := range bindings {
			if b == nil && name != "" && o.Operator == name {
				b = o
			}
		}
	}
	if b != nil {
		return func(args ...ref.Val) ref.Val {
			switch {
			case len(args) == 1 && b.Unary != nil:
				return b.Unary(args[0])
			case len(args) == 2 && b.Binary != nil:
				return b.Binary(args[0], args[1])
			case b.Function != nil:
				return b.Function(args...)
			}
			return types.NoSuchOverloadErr()
		}, nil
	}
	return nil, fmt.Errorf("function %s has no implementation %s", call.Function(), call.OverloadID())
}

// replaceWithin says whether s.replace(old, new[, n]) builds at most maxStringSize bytes.
func replaceWithin(args []ref.Val) bool {
	if len(args) < 3 {
		return true
	}
	s, ok1 := args[0].(types.String)
	old, ok2 := args[1].(types.String)
	repl, ok3 := args[2].(types.String)
	if !ok1 || !ok2 || !ok3 {
		return true // the implementation refuses them
	}
	var count int
	if old == "" {
		count = utf8.RuneCountInString(string(s)) + 1
	} else {
		count = strings.Count(string(s), string(old))
	}
	if len(args) > 3 {
		if n, ok := args[3].(types.Int); ok && n >= 0 && int64(count) > int64(n) {
			count = int(n)
		}
	}
	size := uint64(len(s)) + mulSat(uint64(count), uint64(len(repl)))
	return size <= maxStringSize
}

// joinWithin says whether list.join([sep]) builds at most maxStringSize bytes; it reads no more
// items than it takes to know.
func joinWithin(args []ref.Val) bool {
	l, ok := args[0].(traits.Lister)
	if !ok {
		return true
	}
	var sep uint64
	if len(args) > 1 {
		if s, ok := args[1].(types.String); ok {
			sep = uint64(len(s))
		}
	}
	var size uint64
	it := l.Iterator()
	for it.HasNext() == types.True {
		if s, ok := it.Next().(types.String); ok {
			size += uint64(len(s))
		}
		size += sep
		if size > maxStringSize+sep {
			return false
		}
	}
	return true
}

// splitWithin says whether s.split(sep[, n]) builds at most maxSplitItems items.
func splitWithin(args []ref.Val) bool {
	s, ok1 := args[0].(types.String)
	sep, ok2 := args[1].(types.String)
	if !ok1 || !ok2 {
		return true
	}
	if len(args) > 2 {
		if n, ok := args[2].(types.Int); ok && n >= 0 && n <= maxSplitItems {
			return true
		}
	}
	var items int
	if sep == "" {
		items = utf8.RuneCountInString(string(s))
	} else {
		items = strings.Count(string(s), string(sep)) + 1
	}
	return items <= maxSplitItems
}
