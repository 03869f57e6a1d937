package crash

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
)

// journalEvent is a change of a release's journal, as a watch delivered it.
type journalEvent struct {
	typ watch.EventType
	// journal is the journal as written; nil for a deletion.
	journal *release.Journal
	at      time.Time
}

// lastButOne reports whether the journal records every step of its plan but the last done: the
// operation is about to record its outcome, and ends with that step.
func (e journalEvent) lastButOne() bool {
	j := e.journal
	return j != nil && j.Plan != nil && len(j.Steps) >= len(j.Plan.Steps)-1
}

// watchJournal watches the journal of release name from now until ctx ends. Every write of the
// journal is delivered, in order, however short-lived.
func watchJournal(ctx context.Context, t testing.TB, env *testenv.Env, name string) <-chan journalEvent {
	t.Helper()
	secrets := env.Client.CoreV1().Secrets(env.Namespace)
	sel := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", release.JournalKey(name)).String()}
	list, err := secrets.List(ctx, sel)
	if err != nil {
		t.Fatalf("list the journal of %s: %v", name, err)
	}
	sel.ResourceVersion = list.ResourceVersion
	w, err := secrets.Watch(ctx, sel)
	if err != nil {
		t.Fatalf("watch the journal of %s: %v", name, err)
	}
	out := make(chan journalEvent, 256)
	go func() {
		defer close(out)
		defer w.Stop()
		for e := range w.ResultChan() {
			sec, ok := e.Object.(*corev1.Secret)
			if !ok {
				continue
			}
			ev := journalEvent{typ: e.Type, at: time.Now()}
			if e.Type != watch.Deleted {
				var j release.Journal
				if err := json.Unmarshal(sec.Data["journal"], &j); err == nil {
					ev.journal = &j
				}
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// journalTimes reads the events of an operation that ran to its end: how long after its journal
// was created the journal was last written before the operation's last step. It returns when
// the journal's deletion was seen.
func journalTimes(t testing.TB, events <-chan journalEvent) time.Duration {
	t.Helper()
	var created, last time.Time
	for e := range events {
		switch {
		case e.typ == watch.Added:
			created, last = e.at, e.at
		case e.typ == watch.Deleted:
			if created.IsZero() {
				t.Fatal("the journal was deleted before it was seen created")
			}
			return last.Sub(created)
		case e.lastButOne():
			last = e.at
		}
	}
	t.Fatal("the watch of the journal ended before the journal was deleted")
	return 0
}

// killWithin kills p at a moment within its operation: after, counted from when the
// operation's journal was created; at once, though, when the journal shows every step but the
// last done, as the operation then ends in a moment. It says when it killed.
func killWithin(p *process, events <-chan journalEvent, after time.Duration) string {
	for started := false; !started; {
		select {
		case e, ok := <-events:
			if !ok {
				return "not killed: the watch of the journal ended"
			}
			started = e.typ == watch.Added
			if e.lastButOne() {
				p.kill()
				return "killed on its journal's creation, every step but the last done"
			}
		case <-p.done:
			return "not killed: it ended before its journal was written"
		}
	}
	timer := time.NewTimer(after)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			p.kill()
			return fmt.Sprintf("killed %s after its journal was created", after)
		case e, ok := <-events:
			switch {
			case !ok:
				events = nil
			case e.lastButOne():
				p.kill()
				return fmt.Sprintf("killed before %s after its journal was created, once every step but the last was done", after)
			case e.typ == watch.Deleted:
				p.kill()
				return fmt.Sprintf("killed before %s after its journal was created, once the journal was deleted", after)
			}
		case <-p.done:
			return fmt.Sprintf("not killed: it ended before %s after its journal was created", after)
		}
	}
}

// midOperation reports whether the kill that ended r landed while its operation on release name
// was under way: berth was still running when it was killed (it ended by SIGKILL), and the
// operation had begun and not ended (its journal, which it writes after its first step and
// deletes when it ends, is there, running and written by that very process). The process is
// gone: what the journal says now is what it said at the kill.
func midOperation(ctx context.Context, env *testenv.Env, name string, r run) (bool, error) {
	if !r.killed {
		return false, nil
	}
	j, err := release.NewJournals(env.Client.CoreV1(), env.Namespace).Get(ctx, name)
	if err != nil || j == nil {
		return false, err
	}
	return j.State == release.JournalRunning && strings.Contains(j.Holder, fmt.Sprintf("(pid %d on host ", r.pid)), nil
}
