package engine

import (
	"fmt"
	"strings"

	"github.com/berthdev/berth/internal/cluster"
)

// BlockedError says that objects could not be deleted or did not go away, and why: each blocker
// names the object, what holds it (a webhook, a finalizer, dependents, a missing permission) and
// the next step.
type BlockedError struct {
	Step     string
	Blockers []cluster.Blocker
	Cause    error
}

func (e *BlockedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "blocked: %d object(s) could not be removed", len(e.Blockers))
	for _, bl := range e.Blockers {
		fmt.Fprintf(&b, "\n  %s", bl)
	}
	return b.String()
}

func (e *BlockedError) Unwrap() error { return e.Cause }
