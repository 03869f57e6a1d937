package lifecycle

import (
	"context"
	"testing"
	"time"
)

// TestGraced: what is said after the work's end has the one Grace, from now, however its context
// ended, and never past Grace after that context's deadline.
func TestGraced(t *testing.T) {
	stopped, stop := context.WithCancel(context.Background())
	stop()
	late, cancelLate := context.WithDeadline(context.Background(), time.Now().Add(-time.Hour))
	defer cancelLate()
	just, cancelJust := context.WithDeadline(context.Background(), time.Now().Add(-Grace/2))
	defer cancelJust()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		open     bool
		atLatest time.Duration // from now
	}{
		{"stopped, no deadline", stopped, true, Grace},
		{"deadline just passed", just, true, Grace / 2},
		{"deadline long passed", late, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := Graced(tc.ctx)
			defer cancel()
			if open := ctx.Err() == nil; open != tc.open {
				t.Errorf("graced context open = %v, want %v", open, tc.open)
			}
			if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > tc.atLatest {
				t.Errorf("graced context's deadline %v, want within %s", dl, tc.atLatest)
			}
		})
	}
}
