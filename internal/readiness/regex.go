package readiness

import (
	"errors"
	"fmt"
	"math"
	"regexp/syntax"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// The budget of a regular expression of matches. RE2 matches in time proportional to the
// string's length times the size of the pattern's program (its instructions), and one match,
// once started, runs to its end: a pattern of a few bytes ((a|b){1000}, say) compiles to
// thousands of instructions. matches is charged so, before it runs.
const (
	// MaxRegexProgram bounds the program a pattern compiles to, in RE2 instructions: a pattern
	// a health check uses (^True$, [0-9]+\.[0-9]+) compiles to a few dozen; a thousand is
	// compiled in well under a millisecond and some 40 KiB.
	MaxRegexProgram = 1000
	// maxPatternLength bounds the pattern read from an object, before it is parsed: as long as
	// an expression.
	maxPatternLength = MaxExpressionLength
)

// ErrRegexTooLarge says a pattern of matches is longer than maxPatternLength or compiles to more
// than MaxRegexProgram instructions; it is returned before the pattern is compiled.
var ErrRegexTooLarge = errors.New("regular expression too large")

// ErrTooCostly says one call would cost more than CostLimit; it is returned before it runs.
var ErrTooCostly = errors.New("cost limit exceeded")

// RegexError says a pattern an expression spells out cannot be used: it does not parse, or it
// compiles to more than MaxRegexProgram instructions.
type RegexError struct {
	// Pattern is the pattern, as the expression spells it.
	Pattern string
	// Size is the size of its program, in RE2 instructions, when it was compiled (zero when it
	// was refused before); Max the limit.
	Size, Max int
	// Err is why it does not parse.
	Err error
}

func (e *RegexError) Error() string {
	switch {
	case e.Err != nil:
		return fmt.Sprintf("regular expression %q does not parse: %v", e.Pattern, e.Err)
	case e.Size > 0:
		return fmt.Sprintf("regular expression %q compiles to %d RE2 instructions, more than the limit of %d", e.Pattern, e.Size, e.Max)
	}
	return fmt.Sprintf("regular expression %q compiles to more than %d RE2 instructions, the limit", e.Pattern, e.Max)
}

func (e *RegexError) Unwrap() error { return e.Err }

// regexProgram is the size of pattern's program, in RE2 instructions, as Go's regexp compiles
// it. A pattern over maxPatternLength, or whose program is over MaxRegexProgram, is
// ErrRegexTooLarge (with its size, when it was compiled): it is first counted on its syntax
// tree, before it is expanded (a{1000} is one node of it), and compiled only when that count is
// near the limit.
func regexProgram(pattern string) (int, error) {
	if len(pattern) > maxPatternLength {
		return 0, ErrRegexTooLarge
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0, err
	}
	if regexSize(re) > regexSizeSlack*MaxRegexProgram {
		return 0, ErrRegexTooLarge
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0, err
	}
	if len(prog.Inst) > MaxRegexProgram {
		return len(prog.Inst), ErrRegexTooLarge
	}
	return len(prog.Inst), nil
}

// regexSizeSlack is how far over MaxRegexProgram regexSize may count a pattern that is compiled
// to be counted exactly.
const regexSizeSlack = 4

// regexSize is about the number of instructions re compiles to, counted on its syntax tree; it
// saturates past regexSizeSlack*MaxRegexProgram.
func regexSize(re *syntax.Regexp) int64 {
	const over = regexSizeSlack*MaxRegexProgram + 1
	sat := func(n int64) int64 { return min(n, over) }
	subs := func() int64 {
		var n int64
		for _, s := range re.Sub {
			n = sat(n + regexSize(s))
		}
		return n
	}
	switch re.Op {
	case syntax.OpLiteral:
		return sat(int64(len(re.Rune)) + 1)
	case syntax.OpCapture, syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return sat(2 + subs())
	case syntax.OpConcat:
		return sat(1 + subs())
	case syntax.OpAlternate:
		return sat(int64(len(re.Sub)) + subs())
	case syntax.OpRepeat:
		n := int64(re.Max)
		if n < 0 {
			n = int64(re.Min) + 1
		}
		return sat(max(n, 1) * (subs() + 1))
	}
	return 2
}

// matchesCost is what s.matches(pattern) costs, when pattern's program has size instructions:
// a unit for each instruction per ten bytes of s (and for s empty), as an RE2 match may step
// every instruction for every byte.
func matchesCost(length uint64, size int) uint64 {
	return mulSat(addSat(uint64(math.Ceil(float64(length)*stringCostFactor)), 1), uint64(max(size, 1)))
}

// checkRegexes refuses, before anything is estimated, a call of matches whose pattern the
// expression spells out and which does not parse or compiles to more than MaxRegexProgram
// instructions: a *RegexError.
func checkRegexes(ast *cel.Ast) error {
	var found error
	celast.PreOrderVisit(ast.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if found != nil || e.Kind() != celast.CallKind || e.AsCall().FunctionName() != "matches" {
			return
		}
		args := e.AsCall().Args()
		if len(args) == 0 {
			return
		}
		pattern, ok := literalString(args[len(args)-1])
		if !ok {
			return
		}
		if size, err := regexProgram(pattern); err != nil {
			found = &RegexError{Pattern: pattern, Size: size, Max: MaxRegexProgram}
			if !errors.Is(err, ErrRegexTooLarge) {
				found.(*RegexError).Err = err
			}
		}
	}))
	return found
}

// literalString is the value of e when it is a string literal.
func literalString(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// matchesWithin says, before s.matches(pattern) runs, whether its pattern is within
// MaxRegexProgram and the call within CostLimit.
func matchesWithin(args []ref.Val) error {
	if len(args) != 2 {
		return nil
	}
	s, ok1 := args[0].(types.String)
	pattern, ok2 := args[1].(types.String)
	if !ok1 || !ok2 {
		return nil // the implementation refuses them
	}
	size, err := regexProgram(string(pattern))
	switch {
	case errors.Is(err, ErrRegexTooLarge):
		return ErrRegexTooLarge
	case err != nil:
		return nil // the implementation says it does not parse
	case matchesCost(uint64(len(s)), size) > CostLimit:
		return ErrTooCostly
	}
	return nil
}
