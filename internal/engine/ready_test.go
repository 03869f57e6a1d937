package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
)

func deployment(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(1)}}}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetGeneration(1)
	return u
}

func crdNamed(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	u.SetName(name)
	return u
}

// TestWaitReadySkipsObjectsTheirApplyAnsweredReady: a wait-ready step waits only for the objects
// whose apply did not answer them ready (a Deployment without a status), says the others ready at
// once, always waits for a CRD (its kinds must be served too), and makes no wait at all when
// nothing is left to wait for.
func TestWaitReadySkipsObjectsTheirApplyAnsweredReady(t *testing.T) {
	a, b, web, crd := cm("a", ""), cm("b", ""), deployment("web"), crdNamed("shirts.example.com")
	id := resource.IdentityOf
	p := &plan.Plan{Steps: []plan.Step{
		{ID: "apply/crds", Action: plan.Apply, Objects: []resource.Identity{id(crd)}},
		{ID: "wait-ready/crds", Action: plan.WaitReady, Objects: []resource.Identity{id(crd)}},
		{ID: "apply/ConfigMap", Action: plan.Apply, Objects: []resource.Identity{id(a)}},
		{ID: "wait-ready/ConfigMap", Action: plan.WaitReady, Objects: []resource.Identity{id(a)}},
		{ID: "apply/rest", Action: plan.Apply, Objects: []resource.Identity{id(b), id(web)}},
		{ID: "wait-ready", Action: plan.WaitReady, Objects: []resource.Identity{id(a), id(b), id(web)}},
	}}
	f := &fakeCluster{}
	opts := DefaultOptions()
	opts.Objects = byIdentity(a, b, web, crd)
	var progress []string
	opts.Events = func(e Event) {
		if e.Type == ObjectProgress {
			progress = append(progress, e.Step+" "+e.Object.String()+" "+string(e.State))
		}
	}
	if _, err := Execute(context.Background(), f, p, opts); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"apply CustomResourceDefinition.apiextensions.k8s.io/shirts.example.com",
		"wait-ready CustomResourceDefinition.apiextensions.k8s.io/shirts.example.com",
		"apply ConfigMap/ns/a",
		"apply ConfigMap/ns/b", // applied at once with the Deployment
		"apply Deployment.apps/ns/web",
		"wait-ready Deployment.apps/ns/web",
	}
	if len(f.calls) == len(want) {
		slices.Sort(f.calls[3:5])
	}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	wantProgress := []string{
		"wait-ready/ConfigMap ConfigMap/ns/a Ready",
		"wait-ready ConfigMap/ns/a Ready",
		"wait-ready ConfigMap/ns/b Ready",
	}
	if diff := cmp.Diff(wantProgress, progress); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

// TestWaitReadyWaitsForObjectsAStepMayHaveChanged: an object applied before a step that runs
// hooks, adopts objects or removes hooks is waited for even though its apply answered it ready
// (the step may have changed it since); one applied after such a step is not.
func TestWaitReadyWaitsForObjectsAStepMayHaveChanged(t *testing.T) {
	for _, action := range []plan.Action{plan.RunHooks, plan.Adopt, plan.RemoveHooks} {
		t.Run(string(action), func(t *testing.T) {
			a, b := cm("a", ""), cm("b", "")
			id := resource.IdentityOf
			p := &plan.Plan{Steps: []plan.Step{
				{ID: "apply/a", Action: plan.Apply, Objects: []resource.Identity{id(a)}},
				{ID: "changes", Action: action},
				{ID: "apply/b", Action: plan.Apply, Objects: []resource.Identity{id(b)}},
				{ID: "wait-ready", Action: plan.WaitReady, Objects: []resource.Identity{id(a), id(b)}},
			}}
			f := &fakeCluster{}
			opts := DefaultOptions()
			opts.Objects = byIdentity(a, b)
			opts.Steps = stepRecorder{f}
			if _, err := Execute(context.Background(), f, p, opts); err != nil {
				t.Fatal(err)
			}
			want := []string{"apply ConfigMap/ns/a", "run changes (" + string(action) + ")", "apply ConfigMap/ns/b", "wait-ready ConfigMap/ns/a"}
			if diff := cmp.Diff(want, f.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWaitReadyUsesTheStepsReadinessRules: what the apply answered is judged by the execution's
// readiness rules: a Job is ready at once unless jobs are waited for.
func TestWaitReadyUsesTheStepsReadinessRules(t *testing.T) {
	for _, waitForJobs := range []bool{false, true} {
		job := &unstructured.Unstructured{}
		job.SetAPIVersion("batch/v1")
		job.SetKind("Job")
		job.SetNamespace("ns")
		job.SetName("migrate")
		id := resource.IdentityOf(job)
		p := &plan.Plan{Steps: []plan.Step{
			{ID: "apply/Job", Action: plan.Apply, Objects: []resource.Identity{id}},
			{ID: "wait-ready", Action: plan.WaitReady, Objects: []resource.Identity{id}},
		}}
		f := &fakeCluster{}
		opts := DefaultOptions()
		opts.Objects = byIdentity(job)
		opts.Readiness = readiness.Options{WaitForJobs: waitForJobs}
		if _, err := Execute(context.Background(), f, p, opts); err != nil {
			t.Fatal(err)
		}
		waited := len(f.calls) == 2
		if waited != waitForJobs {
			t.Errorf("wait for jobs %v: calls %v", waitForJobs, f.calls)
		}
	}
}

// records returns the records of the desired objects, with the live objects found live.
func records(desired []*unstructured.Unstructured, live ...*unstructured.Unstructured) *plan.Objects {
	var out plan.Objects
	for _, obj := range desired {
		out.Desire(obj, false)
	}
	found := map[resource.Identity]*unstructured.Unstructured{}
	for _, l := range live {
		found[resource.IdentityOf(l)] = l
	}
	out.Survey(found, nil)
	return &out
}

// byIdentity returns the records of objs, none found live.
func byIdentity(objs ...*unstructured.Unstructured) *plan.Objects {
	return records(objs)
}

// TestWaitReadySkipsUnchangedObjectsReadyBefore: an object left unchanged (no apply sent) is
// judged by its live object before the operation, which its apply would have answered: a ready
// ConfigMap is not waited for, a Deployment whose live object is not ready is.
func TestWaitReadySkipsUnchangedObjectsReadyBefore(t *testing.T) {
	a, web := cm("a", ""), deployment("web")
	id := resource.IdentityOf
	p := &plan.Plan{Steps: []plan.Step{
		{ID: "apply", Action: plan.Apply, Objects: []resource.Identity{id(a), id(web)}},
		{ID: "wait-ready", Action: plan.WaitReady, Objects: []resource.Identity{id(a), id(web)}},
	}}
	f := &fakeCluster{}
	opts := DefaultOptions()
	liveWeb := deployment("web")
	liveWeb.SetResourceVersion("7")
	opts.Objects = records([]*unstructured.Unstructured{a, web}, cm("a", "7"), liveWeb)
	opts.Unchanged = map[resource.Identity]bool{id(a): true, id(web): true}
	if _, err := Execute(context.Background(), f, p, opts); err != nil {
		t.Fatal(err)
	}
	if want := []string{"wait-ready Deployment.apps/ns/web"}; !slices.Equal(f.calls, want) {
		t.Errorf("calls %v, want %v", f.calls, want)
	}
}
