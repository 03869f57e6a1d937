package lifecycle

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestGraceEndsGraceAfterTheDeadline: what is said after an operation's deadline (graceContext)
// outlives the deadline, ends Grace after it whenever it starts, and ends with the fence (the lease
// lost); an undo (remaining) has the operation's deadline and none without one.
func TestGraceEndsGraceAfterTheDeadline(t *testing.T) {
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	cancel() // ended, as at the deadline or a signal

	o := &operation{} // a dry run's: no fence
	gctx, gcancel := o.graceContext(ctx)
	defer gcancel()
	if gctx.Err() != nil {
		t.Fatalf("the grace ended with its operation's context: %v", context.Cause(gctx))
	}
	if dl, ok := gctx.Deadline(); !ok || dl.After(deadline.Add(Grace)) || dl.After(time.Now().Add(Grace)) {
		t.Errorf("the grace ends at %v, want by %v and within %s from now", dl, deadline.Add(Grace), Grace)
	}

	// Past its deadline: the grace is what is left of Grace after it.
	late, lateCancel := context.WithDeadline(context.Background(), time.Now().Add(-Grace/2))
	defer lateCancel()
	lctx, lcancel := o.graceContext(late)
	defer lcancel()
	if dl, _ := lctx.Deadline(); time.Until(dl) > Grace/2 {
		t.Errorf("a grace begun %s after the deadline has %s left, want at most %s", Grace/2, time.Until(dl).Round(time.Millisecond), Grace/2)
	}

	// With a fence, the grace ends when the lease is lost.
	fence, lose := context.WithCancelCause(context.Background())
	lost := errors.New("lost")
	f := &operation{session: session{fence: fence}}
	fctx, fcancel := f.graceContext(ctx)
	defer fcancel()
	lose(lost)
	<-fctx.Done()
	if !errors.Is(context.Cause(fctx), lost) {
		t.Errorf("the grace ended with %v, want the lease lost", context.Cause(fctx))
	}

	if _, _, err := o.remaining(context.Background()); err == nil {
		t.Error("an undo started without the operation's deadline")
	}
	var nt *NoTimeLeftError
	if _, _, err := o.remaining(late); !errors.As(err, &nt) {
		t.Errorf("an undo past the deadline = %v, want a *NoTimeLeftError", err)
	}
}
