package status

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/berthdev/berth/internal/controller/inputs"
)

// ErrorText redacts an error by its kind: the errors known to quote values are given by a form
// without them. Any other error can still quote one: a parser's message on a rendered manifest, a
// dry run's or an admission webhook's answer, an error of client-go. A ValueRedactor removes
// the Release's own values from whatever the controller writes of a reconcile: it holds the
// string values of the Release (spec.values and every valuesFrom key, merged), in the forms in
// which a message can quote them, and replaces each occurrence by redactedMark.
//
// It is the second layer, not the first: a value it does not know (one beyond its caps, one too
// short to look for) is still left out where ErrorText leaves it out by kind.

// redactedMark replaces a value in a message.
const redactedMark = "[redacted]"

// Bounds of a ValueRedactor: what it costs is the number of forms times the length of a message.
const (
	// minRedactedValue is the shortest value looked for, in bytes. Shorter strings ("on", "v1",
	// "app") are in every message: looking for them would make messages unreadable, and a
	// secret of three bytes protects nothing. Numbers and booleans are never looked for, for
	// the same reason.
	minRedactedValue = 4
	// maxRedactedForms is how many forms of values are looked for: a value gives up to four
	// (as it is, JSON-escaped, Go-quoted, YAML single-quoted) and a multi-line value each of its
	// lines too. Forms beyond it, those of the values that come last in the values' order (keys
	// sorted, depth first), are not looked for: messages fall back on ErrorText's redaction by
	// kind for them.
	maxRedactedForms = 512
	// maxRedactedForm is the longest form looked for, in bytes: a longer value is looked for by
	// its first maxRedactedForm bytes and by each of its lines.
	maxRedactedForm = 4 << 10
	// maxRedactedMessage is the longest message looked through, in bytes: a longer one is cut,
	// a log line's too (a condition's message is cut shorter anyway, an Event's and a history
	// entry's much shorter).
	maxRedactedMessage = 32 << 10
)

// ValueRedactor removes a Release's values from messages. The zero value and nil remove nothing.
type ValueRedactor struct {
	// forms are the forms looked for, longest first.
	forms []string
}

// NewValueRedactor looks for the string values of values, except those in keep (the Release's
// own names, which every message names anyway and the spec shows).
func NewValueRedactor(values map[string]any, keep ...string) *ValueRedactor {
	return NewSecretFirstRedactor(values, nil, keep...)
}

// NewSecretFirstRedactor is NewValueRedactor that looks for the values at the paths secret
// (those that came encrypted) before any other, so that a Release's many other values never
// leave them out.
func NewSecretFirstRedactor(values map[string]any, secret [][]string, keep ...string) *ValueRedactor {
	c := formCollector{seen: map[string]bool{redactedMark: true}}
	for _, k := range keep {
		c.seen[k] = true
	}
	for _, path := range secret {
		if v, ok := valueAt(values, path); ok {
			c.walk(v)
		}
	}
	c.walk(values)
	slices.SortStableFunc(c.forms, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return &ValueRedactor{forms: c.forms}
}

// valueAt is the value at path in values.
func valueAt(values map[string]any, path []string) (any, bool) {
	var v any = values
	for _, key := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[key]; !ok {
			return nil, false
		}
	}
	return v, true
}

// formCollector collects the forms of string values, up to maxRedactedForms.
type formCollector struct {
	forms []string
	seen  map[string]bool
}

// walk collects the forms of the strings under v, map keys in order.
func (c *formCollector) walk(v any) {
	if len(c.forms) >= maxRedactedForms {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			c.walk(v[k])
		}
	case []any:
		for _, e := range v {
			c.walk(e)
		}
	case string:
		c.value(v)
	}
}

// value adds the forms of s: as it is, as JSON and Go quote it (without the quotes), as YAML
// quotes it in single quotes, and, when it has several lines, each line.
func (c *formCollector) value(s string) {
	if c.seen[s] || len(s) < minRedactedValue || isKeyword(s) {
		return
	}
	c.add(s)
	c.add(jsonEscaped(s))
	q := strconv.Quote(s)
	c.add(q[1 : len(q)-1])
	c.add(strings.ReplaceAll(s, "'", "''"))
	if strings.Contains(s, "\n") {
		for _, line := range strings.Split(s, "\n") {
			c.add(strings.TrimSpace(line))
		}
	}
}

// add adds one form, cut to maxRedactedForm, unless it is too short, known, or part of
// redactedMark (which would then be redacted again on every write).
func (c *formCollector) add(form string) {
	if len(form) > maxRedactedForm {
		end := maxRedactedForm
		for end > 0 && !utf8.RuneStart(form[end]) {
			end--
		}
		form = form[:end]
	}
	if len(c.forms) >= maxRedactedForms || len(form) < minRedactedValue || c.seen[form] || strings.Contains(redactedMark, form) {
		return
	}
	c.seen[form] = true
	c.forms = append(c.forms, form)
}

// isKeyword says s is a word YAML reads as a boolean or null: in every rendered manifest.
func isKeyword(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false", "null":
		return true
	}
	return false
}

// jsonEscaped is s as a JSON string holds it, without its quotes.
func jsonEscaped(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(s) != nil {
		return s
	}
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

// Text is msg with every occurrence of a value replaced by redactedMark; occurrences that overlap
// or touch are replaced by one mark. A msg longer than maxRedactedMessage is cut to it first,
// and a value that the cut would split is redacted whole, as the cut is made after. A msg that
// was cut before (it ends with cutMark) has the start of a value that ends it redacted too.
func (r *ValueRedactor) Text(msg string) string {
	if r == nil || len(r.forms) == 0 || msg == "" {
		return msg
	}
	body, cut := strings.CutSuffix(msg, cutMark)
	end := len(body)
	if end > maxRedactedMessage {
		end = maxRedactedMessage
		for end > 0 && !utf8.RuneStart(body[end]) {
			end--
		}
		cut = true
	}
	// A form that starts before end lies within end+maxRedactedForm.
	text := body[:min(len(body), end+maxRedactedForm)]
	var tail [2]int
	if cut && end == len(body) {
		tail = [2]int{end - r.partial(body), end}
	}
	spans := r.spans(text, tail)
	if len(spans) == 0 && !cut {
		return msg
	}
	var b strings.Builder
	at := 0
	for _, s := range spans {
		if s[0] >= end {
			break
		}
		b.WriteString(text[at:s[0]])
		b.WriteString(redactedMark)
		at = s[1]
	}
	if at < end {
		b.WriteString(text[at:end])
	}
	if cut {
		b.WriteString(cutMark)
	}
	return b.String()
}

// partial is the length of the longest start of a form that ends text, when it is at least
// minRedactedValue bytes: what a cut left of a value. Each form is matched against text's end as
// Knuth, Morris and Pratt match, in time linear in the form's length.
func (r *ValueRedactor) partial(text string) int {
	longest := 0
	var fail []int
	for _, f := range r.forms {
		if len(f)-1 <= longest {
			continue
		}
		fail = prefixFunction(f, fail[:0])
		q := 0
		for i := max(0, len(text)-len(f)+1); i < len(text); i++ {
			for q > 0 && text[i] != f[q] {
				q = fail[q-1]
			}
			if text[i] == f[q] {
				q++
			}
			if q == len(f) {
				q = fail[q-1]
			}
		}
		if q >= minRedactedValue {
			longest = max(longest, q)
		}
	}
	return longest
}

// prefixFunction is, for each i, the length of the longest proper prefix of f[:i+1] that is also
// its suffix, appended to buf.
func prefixFunction(f string, buf []int) []int {
	buf = append(buf, 0)
	k := 0
	for i := 1; i < len(f); i++ {
		for k > 0 && f[i] != f[k] {
			k = buf[k-1]
		}
		if f[i] == f[k] {
			k++
		}
		buf = append(buf, k)
	}
	return buf
}

// spans are the byte ranges of text that hold a form, merged where they overlap or touch, in
// order, with extra (an empty one adds nothing). Every occurrence counts, overlapping ones too:
// each adds one to where it starts and takes one from where it ends, and the ranges are where the
// running sum is above zero.
func (r *ValueRedactor) spans(text string, extra [2]int) [][2]int {
	var depth []int32
	if extra[0] < extra[1] {
		depth = make([]int32, len(text)+1)
		depth[extra[0]]++
		depth[extra[1]]--
	}
	for _, f := range r.forms {
		for at := 0; at+len(f) <= len(text); {
			i := strings.Index(text[at:], f)
			if i < 0 {
				break
			}
			if depth == nil {
				depth = make([]int32, len(text)+1)
			}
			depth[at+i]++
			depth[at+i+len(f)]--
			at += i + 1
		}
	}
	var spans [][2]int
	sum := int32(0)
	for i, d := range depth {
		was := sum
		sum += d
		switch {
		case was == 0 && sum > 0:
			spans = append(spans, [2]int{i, i})
		case was > 0 && sum == 0:
			spans[len(spans)-1][1] = i
		}
	}
	return spans
}

// Error is err as the controller may write it: ErrorText's form, without the values.
func (r *ValueRedactor) Error(err error) string { return r.Text(ErrorText(err)) }

// Line is the first line of Error.
func (r *ValueRedactor) Line(err error) string { return inputs.FirstLine(r.Error(err)) }

type redactorKey struct{}

// withRedactor is ctx carrying the redactor of its reconcile.
func withRedactor(ctx context.Context, r *ValueRedactor) context.Context {
	return context.WithValue(ctx, redactorKey{}, r)
}

// RedactorOf is the redactor ctx carries; nil, which redacts nothing, when it carries none.
func RedactorOf(ctx context.Context) *ValueRedactor {
	r, _ := ctx.Value(redactorKey{}).(*ValueRedactor)
	return r
}

// Redacting is ctx carrying r, and a logger that writes nothing r would redact: what the
// reconcile logs goes through it.
func Redacting(ctx context.Context, r *ValueRedactor) context.Context {
	ctx = withRedactor(ctx, r)
	if sink := log.FromContext(ctx).GetSink(); sink != nil {
		if d, ok := sink.(logr.CallDepthLogSink); ok {
			sink = d.WithCallDepth(1) // this wrapper's frame
		}
		ctx = log.IntoContext(ctx, logr.New(redactSink{sink: sink, r: r}))
	}
	return ctx
}

// redactedError is an error as the controller may write it (its text), wrapping it for callers
// that look for its kind (controller-runtime's reconcile.TerminalError).
type redactedError struct {
	text string
	err  error
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.err }

// RedactError is err as the controller may log it: controller-runtime logs the error a
// reconcile returns.
func (r *ValueRedactor) RedactError(err error) error {
	if err == nil {
		return nil
	}
	return &redactedError{text: r.Error(err), err: err}
}

// redactSink is a logr.LogSink that redacts messages, errors and string values with r.
type redactSink struct {
	sink logr.LogSink
	r    *ValueRedactor
}

func (s redactSink) Init(info logr.RuntimeInfo) { s.sink.Init(info) }
func (s redactSink) Enabled(level int) bool     { return s.sink.Enabled(level) }

func (s redactSink) Info(level int, msg string, kv ...any) {
	s.sink.Info(level, s.r.Text(msg), s.values(kv)...)
}

func (s redactSink) Error(err error, msg string, kv ...any) {
	s.sink.Error(s.r.RedactError(err), s.r.Text(msg), s.values(kv)...)
}

func (s redactSink) WithValues(kv ...any) logr.LogSink {
	return redactSink{sink: s.sink.WithValues(s.values(kv)...), r: s.r}
}

func (s redactSink) WithName(name string) logr.LogSink {
	return redactSink{sink: s.sink.WithName(name), r: s.r}
}

// WithCallDepth keeps the caller the sink reports that of the log call, past this wrapper.
func (s redactSink) WithCallDepth(depth int) logr.LogSink {
	if d, ok := s.sink.(logr.CallDepthLogSink); ok {
		return redactSink{sink: d.WithCallDepth(depth), r: s.r}
	}
	return s
}

// values are key-value pairs with their strings and errors redacted.
func (s redactSink) values(kv []any) []any {
	out := slices.Clone(kv)
	for i := 1; i < len(out); i += 2 {
		switch v := out[i].(type) {
		case string:
			out[i] = s.r.Text(v)
		case error:
			out[i] = s.r.Error(v)
		}
	}
	return out
}
