package status

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/controller/inputs"
	"github.com/berthdev/berth/internal/lifecycle"
)

// Whoever may view a Release's namespace reads its status and Events, and the controller's logs
// and metrics are read by its operators: none of them may learn the release's values, which come
// from the tenant's Secrets. What the controller writes there from an error goes through
// ErrorText. What a chart's own code outputs (a hook's logs, a template's fail or required
// message) can print any value: it goes only to status.blockers[].logTail, and only when the
// controller is started with --status-chart-output (controller.Reconciler.StatusChartOutput).

// What a wait says of an object comes from the readiness package, which quotes no value by
// construction: a health check that cannot be evaluated is told by its expression (the
// Release's own spec) and one of a fixed set of kinds of failure (readiness.Failure), never by
// cel-go's words, which quote the values they failed on (a missing key is given by its value);
// a readiness annotation reads only the object's status.

// ErrorText is err's message as the controller may write it in a condition, an Event, the
// status' history or its logs: the parts of it that can carry values are replaced by a form that
// carries none.
//   - an error of the chart package that can quote values (a values schema's violations, a
//     template's failure, Helm's coalescing of values) by its Redacted form;
//   - a failed hook by its outcome and its last Pod's state, without logs, events or its
//     containers' messages (a container's termination message is its own output);
//   - the API server's refusal of an invalid object by the fields and the causes' types, without
//     its message (which quotes the invalid values).
//
// When a wrapper did not keep such an error's message as it is, only the redacted forms are
// given, without the wrappers' words.
func ErrorText(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	var safe []string
	whole := true
	walkErrors(err, func(e error) bool {
		text, ok := redacted(e)
		if !ok {
			return true
		}
		safe = append(safe, text)
		if orig := e.Error(); orig != "" && strings.Contains(msg, orig) {
			msg = strings.ReplaceAll(msg, orig, text)
		} else if orig != "" {
			whole = false
		}
		return false
	})
	if !whole {
		return strings.Join(safe, "; ")
	}
	return msg
}

// ErrorLine is the first line of ErrorText.
func ErrorLine(err error) string { return inputs.FirstLine(ErrorText(err)) }

// walkErrors calls visit with err and, while visit says so, with what it wraps, depth first.
func walkErrors(err error, visit func(error) bool) {
	if err == nil || !visit(err) {
		return
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walkErrors(u.Unwrap(), visit)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walkErrors(e, visit)
		}
	}
}

// redacted is the form of e without values, when e is an error whose message can carry them.
func redacted(e error) (string, bool) {
	switch e := e.(type) {
	case chart.RedactedError:
		return e.Redacted(), true
	case *lifecycle.HookError:
		return fmt.Sprintf("%s hook %s %s%s", e.Event, e.Hook, HookOutcome(e), LastPodState(e.Pods)), true
	case apierrors.APIStatus:
		if s := e.Status(); s.Reason == metav1.StatusReasonInvalid {
			return invalidText(s), true
		}
	}
	return "", false
}

// HookOutcome is the first line of a failed hook's outcome, with the error that ended it (a
// refused create, say) as ErrorText gives it.
func HookOutcome(h *lifecycle.HookError) string {
	outcome := h.Outcome
	if h.Cause != nil {
		if c := h.Cause.Error(); c != "" {
			outcome = strings.ReplaceAll(outcome, c, ErrorText(h.Cause))
		}
	}
	return inputs.FirstLine(outcome)
}

// invalidText says which fields of an object the API server found invalid, and why in its
// causes' types, without its message: "Invalid value: VALUE".
func invalidText(s metav1.Status) string {
	what := "the object"
	var fields []string
	if d := s.Details; d != nil {
		if d.Kind != "" {
			what = strings.TrimSpace(d.Kind + " " + d.Name)
		}
		for _, c := range d.Causes {
			fields = append(fields, strings.TrimSpace(fmt.Sprintf("%s (%s)", c.Field, c.Type)))
		}
	}
	if len(fields) == 0 {
		return what + " is invalid (the API server's message is left out, as it can quote values)"
	}
	return fmt.Sprintf("%s is invalid: %s (the API server's message is left out, as it can quote values)", what, strings.Join(fields, ", "))
}

// containerState is how a container ended or why it waits, from a hook report's "NAME: STATE,
// exit code N (REASON): MESSAGE" or "NAME: waiting: REASON: MESSAGE", without the message.
var containerState = regexp.MustCompile(`^[^:]+: (?:terminated, exit code -?\d+(?: \([A-Za-z]+\))?|waiting(?:: [A-Za-z]+)?|running)`)

// WithoutMessage is a container's state without its message; its name alone when the state
// does not read as expected.
func WithoutMessage(container string) string {
	if s := containerState.FindString(container); s != "" {
		return s
	}
	name, _, _ := strings.Cut(container, ":")
	return name
}

// LastPodState is "; last Pod NAME: PHASE, REASON: MESSAGE, CONTAINERS" for the newest of a
// hook's Pods, the containers without their messages (a termination message is the container's
// own output); empty when it has none.
func LastPodState(pods []cluster.PodReport) string {
	if len(pods) == 0 {
		return ""
	}
	p := pods[len(pods)-1]
	parts := []string{p.Phase, strings.Trim(p.Reason+": "+p.Message, ": ")}
	for _, c := range p.Containers {
		parts = append(parts, WithoutMessage(c))
	}
	parts = slices.DeleteFunc(parts, func(s string) bool { return s == "" })
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("; last Pod %s: %s", p.Name, strings.Join(parts, ", "))
}

// TemplateBlocker names the template that failed to render; its message, which the template's
// author wrote and which can print values, is its logTail.
func TemplateBlocker(t *chart.TemplateError) v1alpha1.Blocker {
	return v1alpha1.Blocker{
		Kind: "template", Object: t.Location(), Message: t.Redacted(),
		Next:    "fix the values the template checks: berth template with the same values prints its message (in logTail too when the controller runs with --status-chart-output)",
		LogTail: t.Error(),
	}
}

// Redact removes from rel's status what a chart's own code output (status.blockers[].
// logTail: a hook's logs, a template's message) unless chartOutput allows it, and the values r
// knows from every message (conditions, blockers, history): every status the controller writes
// goes through it (the controller's patchStatus).
func Redact(rel *v1alpha1.Release, chartOutput bool, r *ValueRedactor) {
	s := &rel.Status
	for i := range s.Blockers {
		b := &s.Blockers[i]
		if !chartOutput {
			b.LogTail = ""
		}
		b.Object, b.Message, b.Next = r.Text(b.Object), r.Text(b.Message), r.Text(b.Next)
	}
	for i := range s.Conditions {
		s.Conditions[i].Message = r.Text(s.Conditions[i].Message)
	}
	for i := range s.History {
		s.History[i].Message = r.Text(s.History[i].Message)
	}
}
