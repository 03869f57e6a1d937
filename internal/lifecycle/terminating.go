package lifecycle

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/berthdev/berth/internal/resource"
)

// NamespaceTerminating reports whether err is the API server's refusal to create an object in a
// namespace that is being deleted.
func NamespaceTerminating(err error) bool {
	return err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

// SkippedHook is a hook that did not run because the API server refused to create it: its
// namespace is being deleted.
type SkippedHook struct {
	Event resource.HookEvent `json:"event"`
	Hook  resource.Identity  `json:"hook"`
	// Reason is the API server's refusal.
	Reason string `json:"reason"`
}

// terminating collects what an uninstall in a namespace being deleted went on without
// (UninstallOptions.SkipHooksInTerminatingNamespace).
type terminating struct {
	mu      sync.Mutex
	skipped []SkippedHook
	// noJournal says the namespace refused the operation's journal.
	noJournal bool
}

func (t *terminating) dropJournal() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.noJournal = true
}

func (t *terminating) journalDropped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.noJournal
}

func (t *terminating) skip(h SkippedHook) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.skipped = append(t.skipped, h)
}

func (t *terminating) hooks() []SkippedHook {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]SkippedHook(nil), t.skipped...)
}
