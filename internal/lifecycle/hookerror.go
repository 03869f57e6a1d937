package lifecycle

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/resource"
)

// HookError says that a hook did not succeed, and what berth saw of it: the Job's conditions, the
// last state of each Pod, their recent events and logs.
type HookError struct {
	Event resource.HookEvent
	Hook  resource.Identity
	// Outcome completes "EVENT hook KIND/NS/NAME ...": "failed: ...", "was deleted before it
	// finished (...)", "did not finish: ...", "could not be created: ...".
	Outcome string
	cluster.HookReport
	// Cause is the error that ended the run, if any (a deadline, a failed create).
	Cause error
}

func (e *HookError) Unwrap() error { return e.Cause }

func (e *HookError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s hook %s %s", e.Event, e.Hook, e.Outcome)
	for _, c := range e.Conditions {
		fmt.Fprintf(&b, "\n  %s condition %s", e.Hook.Kind, c)
	}
	for _, p := range e.Pods {
		state := p.State()
		if p.Gone {
			state += " (last seen; the Pod is gone)"
		}
		fmt.Fprintf(&b, "\n  Pod %s: %s", p.Name, state)
		for _, c := range p.Containers {
			fmt.Fprintf(&b, "\n    container %s", c)
		}
	}
	if len(e.Events) > 0 {
		b.WriteString("\n  events:")
		for _, ev := range e.Events {
			fmt.Fprintf(&b, "\n    %s", ev)
		}
	}
	if len(e.Logs) > 0 {
		b.WriteString(renderLogs(e.Logs, "  "))
	}
	return b.String()
}

// renderLogs renders the logs of a hook's containers, each under a "logs of POD/CONTAINER:" line
// and indented; when no container's logs are available it says why once.
func renderLogs(logs map[string]string, indent string) string {
	keys := slices.Sorted(maps.Keys(logs))
	if len(keys) == 0 {
		return "\n" + indent + "logs: none (the hook has no Pods)"
	}
	// When no container's logs can be read, the first reason says it for all.
	none := true
	for _, k := range keys {
		none = none && strings.HasPrefix(logs[k], "not available")
	}
	if none {
		s := fmt.Sprintf("\n%slogs of %s: %s", indent, keys[0], logs[keys[0]])
		if len(keys) > 1 {
			s += fmt.Sprintf("; nor of the %d other container(s)", len(keys)-1)
		}
		return s
	}
	var b strings.Builder
	for _, k := range keys {
		text := strings.TrimRight(logs[k], "\n")
		if !strings.Contains(text, "\n") && (strings.HasPrefix(text, "not available") || text == "empty") {
			fmt.Fprintf(&b, "\n%slogs of %s: %s", indent, k, text)
			continue
		}
		fmt.Fprintf(&b, "\n%slogs of %s:", indent, k)
		for line := range strings.SplitSeq(text, "\n") {
			fmt.Fprintf(&b, "\n%s  | %s", indent, line)
		}
	}
	return b.String()
}
