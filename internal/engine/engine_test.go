package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
)

// fakeCluster records what the engine asks of it; applying an object named "bad" fails.
type fakeCluster struct {
	mu     sync.Mutex
	calls  []string
	resets int
}

func (f *fakeCluster) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeCluster) Apply(_ context.Context, obj *unstructured.Unstructured, _ cluster.ApplyOptions) (*unstructured.Unstructured, error) {
	f.record("apply " + resource.IdentityOf(obj).String())
	if obj.GetName() == "bad" {
		return nil, errors.New("rejected")
	}
	out := obj.DeepCopy()
	out.SetResourceVersion("2")
	return out, nil
}

func (f *fakeCluster) Delete(_ context.Context, id resource.Identity, uid types.UID, _ cluster.DeleteOptions) (cluster.DeleteResult, error) {
	f.record("delete " + id.String() + " " + string(uid))
	return cluster.Deleted, nil
}

func (f *fakeCluster) ResetMapper() { f.mu.Lock(); f.resets++; f.mu.Unlock() }

func (f *fakeCluster) WaitReady(_ context.Context, ids []resource.Identity, _ readiness.Options, _ cluster.Progress) error {
	f.record("wait-ready " + join(ids))
	return nil
}

func (f *fakeCluster) WaitAbsent(_ context.Context, targets map[resource.Identity]types.UID, _ cluster.Progress) error {
	f.record("wait-absent")
	return nil
}

func (f *fakeCluster) Diagnose(_ context.Context, id resource.Identity, op string, err error) cluster.Blocker {
	return cluster.Blocker{Object: id, Kind: cluster.BlockedByOther, Message: fmt.Sprint(err)}
}

func join(ids []resource.Identity) string {
	var s []string
	for _, id := range ids {
		s = append(s, id.String())
	}
	return strings.Join(s, ",")
}

func cm(name, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetResourceVersion(rv)
	return u
}

func TestExecute(t *testing.T) {
	a, b, gone := cm("a", ""), cm("b", ""), cm("gone", "")
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName("shirts.example.com")
	ids := func(objs ...*unstructured.Unstructured) []resource.Identity {
		var out []resource.Identity
		for _, o := range objs {
			out = append(out, resource.IdentityOf(o))
		}
		return out
	}
	p := &plan.Plan{Steps: []plan.Step{
		{ID: "apply/crds", Action: plan.Apply, Objects: ids(crd)},
		{ID: "wait-ready/crds", Action: plan.WaitReady, Objects: ids(crd)},
		{ID: "apply/ConfigMap", Action: plan.Apply, Objects: ids(a)},
		{ID: "delete/ConfigMap", Action: plan.Delete, Objects: ids(gone), UIDs: []types.UID{"uid-1"}},
		{ID: "wait-ready", Action: plan.WaitReady, Objects: ids(a)},
	}}
	f := &fakeCluster{}
	var events []EventType
	opts := DefaultOptions()
	opts.Objects = records([]*unstructured.Unstructured{crd, a, b}, cm("a", "1"))
	opts.Events = func(e Event) { events = append(events, e.Type) }

	res, err := Execute(context.Background(), f, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"apply CustomResourceDefinition.apiextensions.k8s.io/shirts.example.com",
		"wait-ready CustomResourceDefinition.apiextensions.k8s.io/shirts.example.com",
		"apply ConfigMap/ns/a",
		"delete ConfigMap/ns/gone uid-1",
		// The ConfigMap's apply answered it ready: it is not waited for.
	}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if f.resets != 2 {
		t.Errorf("mapper reset %d times, want after applying and after establishing CRDs", f.resets)
	}
	wantChanges := []ChangeSetEntry{
		{Object: resource.IdentityOf(crd), Change: Created, Step: "apply/crds"},
		{Object: resource.IdentityOf(a), Change: Configured, Step: "apply/ConfigMap"},
		{Object: resource.IdentityOf(gone), Change: Deleted, Step: "delete/ConfigMap"},
	}
	if diff := cmp.Diff(wantChanges, res.Changes.Entries, cmpopts.IgnoreFields(ChangeSetEntry{}, "Took")); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if events[0] != StepStarted || events[len(events)-1] != StepDone {
		t.Errorf("events %v", events)
	}
}

func TestExecuteStopsAtFailingStep(t *testing.T) {
	bad, next := cm("bad", ""), cm("next", "")
	p := &plan.Plan{Steps: []plan.Step{
		{ID: "apply/ConfigMap", Action: plan.Apply, Objects: []resource.Identity{resource.IdentityOf(bad)}},
		{ID: "apply/later", Action: plan.Apply, Objects: []resource.Identity{resource.IdentityOf(next)}},
	}}
	f := &fakeCluster{}
	opts := DefaultOptions()
	opts.Objects = byIdentity(bad, next)
	_, err := Execute(context.Background(), f, p, opts)
	var se *StepError
	if !errors.As(err, &se) || se.Step != "apply/ConfigMap" || !strings.Contains(err.Error(), "rejected") {
		t.Fatalf("error %v, want the failing step named with its cause", err)
	}
	if len(f.calls) != 1 {
		t.Errorf("calls %v: the engine went on after a failed step", f.calls)
	}
}

// gatedRunner runs validate steps: each waits until release is closed, then fails when fail is set.
type gatedRunner struct {
	f       *fakeCluster
	started chan struct{}
	release chan struct{}
	fail    bool
}

func (r *gatedRunner) RunStep(ctx context.Context, step plan.Step) error {
	close(r.started)
	select {
	case <-r.release:
	case <-time.After(10 * time.Second):
		// Not beside: nothing is applied while this step runs.
		r.f.record("gave up waiting for an apply beside")
	case <-ctx.Done():
		return ctx.Err()
	}
	r.f.record("validated " + join(step.Objects))
	if r.fail {
		return errors.New("denied by admission")
	}
	return nil
}

// gatingCluster is a fakeCluster that releases the runner when the object named "other" is
// applied: the apply happens while the validation runs beside it, or never.
type gatingCluster struct {
	fakeCluster
	runner *gatedRunner
}

func (g *gatingCluster) Apply(ctx context.Context, obj *unstructured.Unstructured, opts cluster.ApplyOptions) (*unstructured.Unstructured, error) {
	if obj.GetName() == "other" {
		<-g.runner.started
		defer close(g.runner.release)
	}
	return g.fakeCluster.Apply(ctx, obj, opts)
}

func TestExecuteRunsStepBeside(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			other, custom := cm("other", ""), cm("custom", "")
			p := &plan.Plan{Steps: []plan.Step{
				{ID: "validate/late", Action: plan.Validate, Objects: []resource.Identity{resource.IdentityOf(custom)}, Beside: true},
				{ID: "apply/other", Action: plan.Apply, Objects: []resource.Identity{resource.IdentityOf(other)}},
				{ID: "apply/custom", Action: plan.Apply, Objects: []resource.Identity{resource.IdentityOf(custom)}},
			}}
			r := &gatedRunner{started: make(chan struct{}), release: make(chan struct{}), fail: fail}
			g := &gatingCluster{runner: r}
			r.f = &g.fakeCluster
			opts := DefaultOptions()
			opts.Objects = byIdentity(other, custom)
			opts.Steps = r
			var steps []string
			opts.Events = func(e Event) {
				if e.Type == StepDone || e.Type == StepFailed {
					steps = append(steps, string(e.Type)+" "+e.Step)
				}
			}
			res, err := Execute(context.Background(), g, p, opts)

			// The apply of other ran while the validation waited for it; custom is applied only
			// once the validation passed.
			want := []string{"apply ConfigMap/ns/other", "validated ConfigMap/ns/custom", "apply ConfigMap/ns/custom"}
			wantSteps := []string{"step-done apply/other", "step-done validate/late", "step-done apply/custom"}
			if fail {
				want, wantSteps = want[:2], []string{"step-done apply/other", "step-failed validate/late"}
				var se *StepError
				if !errors.As(err, &se) || se.Step != "validate/late" {
					t.Fatalf("error %v, want the validate step's failure", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, g.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantSteps, steps); diff != "" {
				t.Errorf("steps ended (-want +got):\n%s", diff)
			}
			if !fail && len(res.Steps) != 3 {
				t.Errorf("result steps %v, want all three", res.Steps)
			}
		})
	}
}

// blockingCluster leaves every object of a wait-absent step pending; its diagnoses wait for each
// other (or for their context to end), so they end at once only when all of them run at once, and
// note the context they were given.
type blockingCluster struct {
	fakeCluster
	mu       sync.Mutex
	waiting  int
	together chan struct{}
	apart    bool
	context  []any
}

func (f *blockingCluster) WaitAbsent(_ context.Context, targets map[resource.Identity]types.UID, _ cluster.Progress) error {
	pending := map[resource.Identity]string{}
	for id := range targets {
		pending[id] = "still there"
	}
	return &cluster.WaitError{Want: "gone", Pending: pending, Cause: context.DeadlineExceeded}
}

func (f *blockingCluster) Diagnose(ctx context.Context, id resource.Identity, op string, err error) cluster.Blocker {
	f.mu.Lock()
	if f.waiting--; f.waiting == 0 {
		close(f.together)
	}
	f.mu.Unlock()
	select {
	case <-f.together:
	case <-ctx.Done():
	}
	f.mu.Lock()
	f.apart = f.apart || ctx.Err() != nil
	f.context = append(f.context, ctx.Value(graceKey{}))
	f.mu.Unlock()
	return cluster.Blocker{Object: id, Kind: cluster.BlockedByOther, Message: "held"}
}

type graceKey struct{}

// TestBlockedObjectsAreDiagnosedAtOnceWithinTheGrace: the objects a wait left pending are
// diagnosed all at once, in the context Options.Afterwards gives, and reported in order.
func TestBlockedObjectsAreDiagnosedAtOnceWithinTheGrace(t *testing.T) {
	var objs []resource.Identity
	for _, n := range []string{"e", "d", "c", "b", "a"} {
		objs = append(objs, resource.IdentityOf(cm(n, "")))
	}
	f := &blockingCluster{waiting: len(objs), together: make(chan struct{})}
	opts := DefaultOptions()
	opts.Afterwards = func(ctx context.Context) (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithValue(context.WithoutCancel(ctx), graceKey{}, "grace"), 10*time.Second)
	}
	p := &plan.Plan{Steps: []plan.Step{{ID: "wait-absent", Action: plan.WaitAbsent, Objects: objs}}}
	_, err := Execute(context.Background(), f, p, opts)
	var be *BlockedError
	if !errors.As(err, &be) {
		t.Fatalf("Execute = %v, want a *BlockedError", err)
	}
	var got []string
	for _, b := range be.Blockers {
		got = append(got, b.Object.Name)
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "d", "e"}, got); diff != "" {
		t.Errorf("blockers (-want +got):\n%s", diff)
	}
	if f.apart {
		t.Error("the diagnoses did not all run at once: the grace ended first")
	}
	for _, v := range f.context {
		if v != "grace" {
			t.Errorf("a diagnosis ran in a context other than Afterwards's: %v", v)
		}
	}
}

// stepRecorder runs the lifecycle's steps by noting them.
type stepRecorder struct{ f *fakeCluster }

func (r stepRecorder) RunStep(_ context.Context, step plan.Step) error {
	r.f.record(fmt.Sprintf("run %s (%s)", step.ID, step.Action))
	return nil
}

// TestExecuteHandsWatchStepsToTheRunner: a watch step is the lifecycle's, as hooks and records
// are: the engine hands it to the runner, in its place, and asks nothing of the cluster for it.
func TestExecuteHandsWatchStepsToTheRunner(t *testing.T) {
	a := cm("a", "")
	id := resource.IdentityOf(a)
	p := &plan.Plan{Steps: []plan.Step{
		{ID: "apply/ConfigMap", Action: plan.Apply, Objects: []resource.Identity{id}},
		{ID: "wait-ready", Action: plan.WaitReady, Objects: []resource.Identity{id}},
		{ID: "watch/2", Action: plan.Watch, Objects: []resource.Identity{id}, Window: &plan.Window{For: time.Minute}},
		{ID: "record/deployed/2", Action: plan.Record},
	}}
	f := &fakeCluster{}
	opts := DefaultOptions()
	opts.Objects = byIdentity(a)
	opts.Steps = stepRecorder{f}
	if _, err := Execute(context.Background(), f, p, opts); err != nil {
		t.Fatal(err)
	}
	want := []string{"apply ConfigMap/ns/a", "run watch/2 (watch)", "run record/deployed/2 (record)"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
