package release

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/testenv"
)

func TestLeaseRace(t *testing.T) {
	env := testenv.New(t)
	const racers = 8
	var wg sync.WaitGroup
	won := make(chan *Lease, racers)
	held := make(chan *HeldError, racers)
	for range racers {
		wg.Go(func() {
			me := Self("berth upgrade web")
			me.Who = "deployer@ci"
			l, err := NewLeases(env.Client.CoordinationV1(), env.Namespace).Acquire(t.Context(), "web", me)
			var he *HeldError
			switch {
			case err == nil:
				won <- l
			case errors.As(err, &he):
				held <- he
			default:
				t.Errorf("acquire: %v", err)
			}
		})
	}
	wg.Wait()
	close(won)
	close(held)
	if len(won) != 1 || len(held) != racers-1 {
		t.Fatalf("%d acquisitions won and %d were refused, want 1 and %d", len(won), len(held), racers-1)
	}
	he := <-held
	if he.Holder.Command != "berth upgrade web" || he.Holder.Who != "deployer@ci" || he.Holder.Since.IsZero() {
		t.Errorf("the refusal names holder %+v, want who, the command and since when", he.Holder)
	}
	l := <-won
	if err := l.Renew(t.Context()); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Fatalf("release: %v", err)
	}
	if h, _, err := NewLeases(env.Client.CoordinationV1(), env.Namespace).Holder(t.Context(), "web"); err != nil || h != nil {
		t.Errorf("after release: holder %+v, %v; want none", h, err)
	}
}

func TestLeaseTakeover(t *testing.T) {
	tests := []struct {
		name string
		// first is the holder whose lease is taken over; later shifts the second process's clock.
		first Holder
		later time.Duration
	}{
		{name: "expired", first: Holder{Host: "elsewhere", PID: 1, Command: "berth install web"}, later: time.Minute},
		{name: "holder process gone", first: Holder{PID: 1 << 30, Command: "berth install web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testenv.New(t)
			first := NewLeases(env.Client.CoordinationV1(), env.Namespace)
			if tt.first.Host == "" {
				tt.first.Host = first.Host
			}
			old, err := first.Acquire(t.Context(), "web", tt.first)
			if err != nil {
				t.Fatal(err)
			}
			second := NewLeases(env.Client.CoordinationV1(), env.Namespace)
			second.Now = func() time.Time { return time.Now().Add(tt.later) }
			if _, err := second.Acquire(t.Context(), "web", Self("berth upgrade web")); err != nil {
				t.Fatalf("take over: %v", err)
			}
			if err := old.Renew(t.Context()); err == nil {
				t.Error("the old holder renewed a lease taken over from it")
			}
			h, live, err := second.Holder(t.Context(), "web")
			if err != nil || h.Command != "berth upgrade web" || !live {
				t.Errorf("holder %+v live %v (%v), want the new holder", h, live, err)
			}
		})
	}
}

func TestJournalRoundTrip(t *testing.T) {
	env := testenv.New(t)
	js := NewJournals(env.Client.CoreV1(), env.Namespace)
	if j, err := js.Get(t.Context(), "web"); j != nil || err != nil {
		t.Fatalf("get before put: %+v, %v; want none", j, err)
	}
	j := &Journal{Release: "web", Operation: OpUpgrade, Revision: 2, State: JournalRunning,
		Plan: &plan.Plan{Steps: []plan.Step{{ID: "apply/ConfigMap", Action: plan.Apply}}}}
	for _, step := range []string{"", "apply/ConfigMap"} {
		if step != "" {
			j.Steps = append(j.Steps, step)
		}
		if err := js.Put(t.Context(), j); err != nil {
			t.Fatal(err)
		}
	}
	got, err := js.Get(t.Context(), "web")
	if err != nil || !got.StepDone("apply/ConfigMap") || got.Operation != OpUpgrade || len(got.Plan.Steps) != 1 {
		t.Fatalf("get: %+v, %v", got, err)
	}
	if err := js.Delete(t.Context(), "web"); err != nil {
		t.Fatal(err)
	}
	if err := js.Delete(t.Context(), "web"); err != nil {
		t.Fatalf("delete twice: %v", err)
	}
}
