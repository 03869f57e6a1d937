package engine

import (
	"time"

	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
)

// EventType says what an Event reports.
type EventType string

const (
	StepStarted    EventType = "step-started"
	StepDone       EventType = "step-done"
	StepFailed     EventType = "step-failed"
	ObjectChanged  EventType = "object-changed"  // applied or deleted; Message is the Change
	ObjectProgress EventType = "object-progress" // what a wait learnt; State and Message say
	HookStarted    EventType = "hook-started"    // Step is the hook event, Object the hook
	HookDone       EventType = "hook-done"       // Message is the outcome, Duration its run time
	HookFailed     EventType = "hook-failed"
	HookPodFailed  EventType = "hook-pod-failed" // a Pod of a hook Job failed; Message says why and whether it is retried
	HookLogs       EventType = "hook-logs"       // the logs of a hook's Pods (helm.sh/hook-output-log-policy); Message holds them
	HookLogLine    EventType = "hook-log-line"   // a line a hook's container wrote while it ran; Source says which
)

// Event is one thing the engine did or saw. The CLI renders events as progress.
type Event struct {
	Type     EventType         `json:"type"`
	Step     string            `json:"step"`
	Object   resource.Identity `json:"object,omitzero"`
	State    readiness.State   `json:"state,omitempty"`
	Message  string            `json:"message,omitempty"`
	Duration time.Duration     `json:"duration,omitempty"`
	// Source is the Pod and container ("pod/container") a HookLogLine came from.
	Source string `json:"source,omitempty"`
}
