package controller_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/berthdev/berth/internal/testenv"
)

// Labels the C4 chart puts on its objects, so that the test can tell what it sees.
const (
	instanceLabel = "app.kubernetes.io/instance"
	hookLabel     = "c4.berth.dev/hook"
	revisionLabel = "c4.berth.dev/revision"
)

// hookRun is one creation of a hook Job: one run of the hook.
type hookRun struct {
	release, hook string
	revision      int
	uid           string
	// rv is the resourceVersion of its creation. The devcluster has one etcd, whose revisions
	// order every write of the cluster: resourceVersions of different objects compare.
	rv uint64
}

func (r hookRun) String() string {
	return fmt.Sprintf("%s hook %s of revision %d (Job UID %s, created at resourceVersion %d)", r.release, r.hook, r.revision, r.uid, r.rv)
}

// observer records, from watches that outlive any controller process, every creation of a hook
// Job, when each release's objects of each revision were first applied, and when they were first
// deleted.
type observer struct {
	mu   sync.Mutex
	runs []hookRun
	seen map[string]bool // Job UIDs
	// applied is the first resourceVersion at which a release's ConfigMap showed a revision, by
	// "release/revision"; deleted the first at which it was being deleted, by release.
	applied map[string]uint64
	deleted map[string]uint64
	errs    []error
}

// observe starts the watches of the test's namespace; they end with the test.
func observe(t *testing.T, env *testenv.Env) *observer {
	t.Helper()
	o := &observer{seen: map[string]bool{}, applied: map[string]uint64{}, deleted: map[string]uint64{}}
	ctx := t.Context()
	jobs := env.Client.BatchV1().Jobs(env.Namespace)
	configMaps := env.Client.CoreV1().ConfigMaps(env.Namespace)
	opts := metav1.ListOptions{LabelSelector: instanceLabel}
	jl, err := jobs.List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := configMaps.List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	start := func(rv string, w func(context.Context, metav1.ListOptions) (watch.Interface, error)) {
		rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{
			WatchFuncWithContext: func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
				lo.LabelSelector = instanceLabel
				return w(ctx, lo)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rw.Stop(); <-rw.Done() })
		go func() {
			for e := range rw.ResultChan() {
				o.note(e)
			}
		}()
	}
	start(jl.ResourceVersion, jobs.Watch)
	start(cl.ResourceVersion, configMaps.Watch)
	return o
}

func (o *observer) note(e watch.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e.Type == watch.Error {
		o.errs = append(o.errs, fmt.Errorf("watch: %v", e.Object))
		return
	}
	obj, ok := e.Object.(metav1.Object)
	if !ok {
		return
	}
	rv, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		o.errs = append(o.errs, fmt.Errorf("resourceVersion of %s: %w", obj.GetName(), err))
		return
	}
	release := obj.GetLabels()[instanceLabel]
	switch x := e.Object.(type) {
	case *batchv1.Job:
		if o.seen[string(x.UID)] {
			return
		}
		o.seen[string(x.UID)] = true
		revision, _ := strconv.Atoi(x.Labels[revisionLabel])
		// The first event of a Job may be a later one than its creation (a watch that restarted
		// after a gap): its creation is at most its first resourceVersion seen.
		o.runs = append(o.runs, hookRun{release: release, hook: x.Labels[hookLabel], revision: revision, uid: string(x.UID), rv: rv})
	case *corev1.ConfigMap:
		if e.Type == watch.Deleted || x.DeletionTimestamp != nil {
			if _, ok := o.deleted[release]; !ok {
				o.deleted[release] = rv
			}
			return
		}
		key := release + "/" + x.Data["revision"]
		if _, ok := o.applied[key]; !ok && x.Data["revision"] != "" {
			o.applied[key] = rv
		}
	}
}

// hookProblems checks what was observed against the chart's hook delete policies:
//   - a hook without before-hook-creation (notify) runs at most once per revision: its policy
//     forbids creating it again while a run of it may exist;
//   - a pre-install/pre-upgrade hook (migrate) is never created again once the objects of its
//     revision were applied: the operation had recorded it as done;
//   - a pre-delete hook (drain) is never created again once the release's objects were being
//     deleted: the uninstall had recorded it as done.
func (o *observer) hookProblems() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var problems []string
	for _, err := range o.errs {
		problems = append(problems, err.Error())
	}
	runs := map[string][]hookRun{}
	for _, r := range o.runs {
		key := fmt.Sprintf("%s/%s/%d", r.release, r.hook, r.revision)
		runs[key] = append(runs[key], r)
		switch r.hook {
		case "migrate":
			if at, ok := o.applied[fmt.Sprintf("%s/%d", r.release, r.revision)]; ok && r.rv > at {
				problems = append(problems, fmt.Sprintf("%s ran again after the objects of its revision were applied (at resourceVersion %d)", r, at))
			}
		case "drain":
			if at, ok := o.deleted[r.release]; ok && r.rv > at {
				problems = append(problems, fmt.Sprintf("%s ran again after the release's objects were being deleted (at resourceVersion %d)", r, at))
			}
		}
	}
	for _, rs := range runs {
		if rs[0].hook == "notify" && len(rs) > 1 {
			problems = append(problems, fmt.Sprintf("hook notify (hook-delete-policy hook-succeeded, no before-hook-creation) ran %d times: %v", len(rs), rs))
		}
	}
	return problems
}

// count is how many hook runs were observed.
func (o *observer) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.runs)
}
