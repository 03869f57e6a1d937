package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
)

// WindowOptions are how WatchWindow watches a release that is Ready.
type WindowOptions struct {
	// For is how long the window lasts from the call; 0 judges once what is seen now (a window
	// whose time is over, resumed).
	For time.Duration
	// Tolerance is how long an object may stay not ready before that is a regression.
	Tolerance time.Duration
	// Restarts is how many times each container may restart in the window.
	Restarts int
	// Readiness are the rules an object is judged by.
	Readiness readiness.Options
}

// RegressionError is a regression seen in the watch window: an object of the release, or a Pod of
// one of its workloads, that was ready and is no longer.
type RegressionError struct {
	// Object is the release's object that regressed, or whose Pod did.
	Object resource.Identity
	// Pod is the Pod that regressed (a Pod of Object, or Object itself), or, when Object is what
	// regressed, its newest Pod that is not ready; nil when there is none.
	Pod *resource.Identity
	// What says what changed: "was ready, now failed: ...", "container web restarted 2 time(s)
	// in the window (0 allowed), waiting in CrashLoopBackOff, last exit code 1 (Error)", ...
	What string
	// Since is when Object stopped being ready, or when what regressed was seen (for a restart,
	// when the container's previous instance ended).
	Since time.Time
	// Report is Pod's state as last seen; nil without Pod.
	Report *PodReport
	// Logs are the ends of Pod's container logs by "pod/container", or why there are none (see
	// HookReport.Logs); a container that restarted has the log of its previous instance, the
	// one that ended, under "pod/container (previous)".
	Logs map[string]string
	// event says Since is when something was seen rather than the start of a state.
	event bool
	// container is the container that restarted, for a restart.
	container string
}

func (e *RegressionError) Error() string {
	var b strings.Builder
	b.WriteString(e.Object.String())
	if e.Pod != nil && *e.Pod != e.Object {
		b.WriteString(": Pod " + e.Pod.Name)
	}
	b.WriteString(": " + e.What)
	if !e.Since.IsZero() {
		word := "since"
		if e.event {
			word = "at"
		}
		fmt.Fprintf(&b, " (%s %s)", word, e.Since.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// Detail renders the Pod's state and log tails, one line each, indented under the Pod and each
// log: what is printed after Error.
func (e *RegressionError) Detail() []string {
	if e.Report == nil {
		return nil
	}
	out := []string{fmt.Sprintf("Pod %s: %s", e.Report.Name, e.Report.State())}
	for _, c := range e.Report.Containers {
		out = append(out, "  "+c)
	}
	keys := make([]string, 0, len(e.Logs))
	for k := range e.Logs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, "log of "+k+":")
		for line := range strings.SplitSeq(strings.TrimRight(e.Logs[k], "\n"), "\n") {
			out = append(out, "  "+line)
		}
	}
	return out
}

// WindowIncompleteError says the watch window did not complete: the operation's deadline (or its
// cancellation) came first, or the API server refused to list or watch one of its objects (Cause
// is then the refusal). Nothing regressed until then.
type WindowIncompleteError struct {
	// For is the window's length, Left what was left of it.
	For, Left time.Duration
	Cause     error
}

func (e *WindowIncompleteError) Error() string {
	if e.Left <= 0 {
		return fmt.Sprintf("the watch window could not be judged (its objects were not listed yet): %v", e.Cause)
	}
	return fmt.Sprintf("the watch window did not complete (%s of %s left): %v", e.Left.Round(time.Second), e.For, e.Cause)
}

func (e *WindowIncompleteError) Unwrap() error { return e.Cause }

// reportGrace bounds how long the report of a regressed Pod is read, within the caller's context.
const reportGrace = 10 * time.Second

// WatchWindow watches targets, which are Ready, for opts.For, and returns a *RegressionError at
// the first regression seen:
//   - a target whose readiness is Failed (a Job of the release that fails is one, whether Jobs
//     are waited for or not);
//   - a target not ready (absent included) for longer than opts.Tolerance, or not ready when
//     the window ends;
//   - a container of a Pod of the release that restarts more than opts.Restarts times in the
//     window, counted from its restartCount when the Pod was first seen (from 0 for a Pod
//     created in the window); a container waiting in CrashLoopBackOff counts as one restart at
//     least;
//   - a Pod of the release in phase Failed.
//
// The Pods of the release are the Pod targets and the Pods that the spec.selector of a
// Deployment, StatefulSet, DaemonSet, ReplicaSet, ReplicationController or Job target matches in
// its namespace; those a Job owns (its readiness judges them) and those being deleted (a deleted
// Pod may end Failed) are not judged by themselves.
//
// It makes no request but its watches: one list+watch per resource and namespace of the targets
// (as WaitReady), and one of all Pods in each namespace that holds a target that has Pods. After a
// regression, it reads the regressed Pod's logs (of the previous instance of a container that
// restarted). With opts.For 0 it judges once what the first lists show: every target ready, no
// Pod of the release Failed, no container of one waiting in CrashLoopBackOff (restarts cannot be
// counted then); so does a window that ends before the first lists do. When ctx ends first, it
// returns a *WindowIncompleteError. progress is told of each change of a target's readiness, and
// of each restart of a Pod's container within what is allowed.
func (c *Client) WatchWindow(ctx context.Context, targets []resource.Identity, opts WindowOptions, progress Progress) error {
	if len(targets) == 0 {
		return nil
	}
	start := time.Now()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	j := newJudge(targets, opts)
	var others []resource.Identity
	for _, id := range targets {
		if !isPodID(id) {
			others = append(others, id)
		}
	}
	out := make(chan observation)
	none := make(chan struct{})
	close(none)
	var synced <-chan struct{} = none
	if len(others) > 0 {
		s, err := c.observe(wctx, others, out)
		if err != nil {
			return err
		}
		synced = s
	}
	pods := make(chan podEvent)
	podsSynced := c.watchPods(wctx, j.podNamespaces(), pods)
	allSynced := make(chan struct{})
	go func() {
		for _, ch := range []<-chan struct{}{synced, podsSynced} {
			select {
			case <-ch:
			case <-wctx.Done():
				return
			}
		}
		close(allSynced)
	}()
	var end <-chan time.Time
	if opts.For > 0 {
		t := time.NewTimer(opts.For)
		defer t.Stop()
		end = t.C
	}
	tolerance := time.NewTimer(time.Hour)
	tolerance.Stop()
	defer tolerance.Stop()
	once := opts.For <= 0
	tell := func(n notice) {
		if progress != nil && n.id != nil {
			progress(*n.id, n.result)
		}
	}
	for {
		var reg *RegressionError
		now := time.Now()
		select {
		case o := <-out:
			if o.refused != nil {
				return &WindowIncompleteError{For: opts.For, Left: max(opts.For-time.Since(start), 0), Cause: o.refused}
			}
			obj := o.obj
			if o.gone {
				obj = nil
			}
			var n notice
			reg, n = j.target(o.id, obj, now)
			tell(n)
		case e := <-pods:
			// The Pod's own judgement names a failed Pod's reason better than its readiness.
			var n notice
			reg, n = j.pod(e.obj, e.gone, e.initial, now)
			tell(n)
			if id := resource.IdentityOf(e.obj); j.isTarget(id) {
				obj := e.obj
				if e.gone {
					obj = nil
				}
				r, n := j.target(id, obj, now)
				tell(n)
				if reg == nil {
					reg = r
				}
			}
		case <-allSynced:
			allSynced = nil
			for _, n := range j.unseen(now) {
				tell(n)
			}
			if once {
				reg = j.final(now, true)
				if reg == nil {
					return nil
				}
			}
		case <-tolerance.C:
			reg = j.expired(now)
		case <-end:
			end = nil
			if allSynced != nil {
				// The window ended before the first lists did: it is judged once, from them.
				once = true
				break
			}
			reg = j.final(now, false)
			if reg == nil {
				return nil
			}
		case <-ctx.Done():
			left := opts.For - time.Since(start)
			return &WindowIncompleteError{For: opts.For, Left: max(left, 0), Cause: context.Cause(ctx)}
		}
		// A window judged once judges only when the first lists are done.
		if reg != nil && (!once || allSynced == nil) {
			cancel()
			c.describe(ctx, reg, j)
			return reg
		}
		if at, ok := j.nextExpiry(); ok && !once {
			tolerance.Reset(time.Until(at))
		} else {
			tolerance.Stop()
		}
	}
}

// describe fills in the report and logs of the regressed Pod, as last seen, within ctx and at
// most reportGrace: the log of the container that restarted, of its previous instance; else of
// each container that runs or ran, and of the previous instance of each that waits to restart.
func (c *Client) describe(ctx context.Context, reg *RegressionError, j *judge) {
	pod := j.regressedPod(reg)
	if pod == nil {
		return
	}
	r := podReport(pod, false)
	reg.Report = &r
	reg.Logs = map[string]string{}
	rctx, cancel := context.WithTimeout(ctx, reportGrace)
	defer cancel()
	if reg.container != "" {
		reg.Logs[pod.GetName()+"/"+reg.container+" (previous)"] = c.logTail(rctx, pod.GetNamespace(), pod.GetName(), reg.container, true)
		return
	}
	restarted := map[string]bool{}
	for _, r := range restartsOf(pod) {
		restarted[r.name] = r.count > 0
	}
	for _, cs := range containerStatuses(pod) {
		switch {
		case cs.state == "running" || cs.state == "terminated":
			reg.Logs[pod.GetName()+"/"+cs.name] = c.logTail(rctx, pod.GetNamespace(), pod.GetName(), cs.name, false)
		case restarted[cs.name]:
			// Waiting to restart: the instance that ended has the log.
			reg.Logs[pod.GetName()+"/"+cs.name+" (previous)"] = c.logTail(rctx, pod.GetNamespace(), pod.GetName(), cs.name, true)
		}
	}
}

// podEvent is a change of a Pod in a watched namespace: its state, or its last state when gone.
// initial says the Pod was in the watch's first list.
type podEvent struct {
	obj           *unstructured.Unstructured
	gone, initial bool
}

// watchPods lists and watches the Pods of each namespace and sends every change to out until ctx
// ends. synced closes once every first list was sent.
func (c *Client) watchPods(ctx context.Context, namespaces []string, out chan<- podEvent) (synced <-chan struct{}) {
	each := make(chan struct{}, len(namespaces))
	for _, ns := range namespaces {
		go c.watchNamespacePods(ctx, ns, out, each)
	}
	return allSynced(ctx, len(namespaces), each)
}

func (c *Client) watchNamespacePods(ctx context.Context, namespace string, out chan<- podEvent, synced chan<- struct{}) {
	inf := dynamicinformer.NewFilteredDynamicInformer(c.dynamic, podsResource, namespace, 0, cache.Indexers{}, nil).Informer()
	if err := inf.SetTransform(dropManagedFields); err != nil {
		return
	}
	send := func(obj any, gone, initial bool) {
		u, tombstone := unwrap(obj)
		if u == nil {
			return
		}
		gone = gone || tombstone
		select {
		case out <- podEvent{obj: u, gone: gone, initial: initial}:
		case <-ctx.Done():
		}
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { send(obj, false, initial) },
		UpdateFunc: func(_, obj any) { send(obj, false, false) },
		DeleteFunc: func(obj any) { send(obj, true, false) },
	})
	if err != nil {
		return
	}
	go inf.Run(ctx.Done())
	select {
	case <-reg.HasSyncedChecker().Done():
	case <-ctx.Done():
		return
	}
	synced <- struct{}{}
	<-ctx.Done()
}

// notice is what progress is told; id is nil when there is nothing to tell.
type notice struct {
	id     *resource.Identity
	result readiness.Result
}

// judge is the window's judgement of what the watches show; it does no I/O and reads no clock.
type judge struct {
	opts    WindowOptions
	targets map[resource.Identity]*targetState
	// order is the targets, sorted: the first of several regressions seen at once is named.
	order []resource.Identity
	pods  map[types.UID]*podState
}

type targetState struct {
	seen   bool
	result readiness.Result
	// wasReady says the target was seen Ready in the window.
	wasReady bool
	// notReadySince is when it was last seen to stop being ready; zero while it is.
	notReadySince time.Time
	// selector matches the labels of its Pods, for a kind that has Pods; nil otherwise.
	selector labels.Selector
}

type podState struct {
	obj *unstructured.Unstructured
	// base is each container's restartCount that restarts in the window are counted from.
	base map[string]int64
	// told is each container's restarts in the window that progress was told of.
	told map[string]int64
}

func newJudge(targets []resource.Identity, opts WindowOptions) *judge {
	j := &judge{opts: opts, targets: map[resource.Identity]*targetState{}, pods: map[types.UID]*podState{}}
	for _, id := range targets {
		if j.targets[id] == nil {
			j.order = append(j.order, id)
		}
		j.targets[id] = &targetState{result: readiness.Result{State: readiness.InProgress, Message: "not observed yet"}}
	}
	slices.SortFunc(j.order, resource.Compare)
	return j
}

func isPodID(id resource.Identity) bool { return id.Group == "" && id.Kind == "Pod" }

// hasPods says whether objects of id's kind have Pods that their spec.selector matches.
func hasPods(id resource.Identity) bool {
	switch id.GroupKind().String() {
	case "Deployment.apps", "StatefulSet.apps", "DaemonSet.apps", "ReplicaSet.apps", "Job.batch", "ReplicationController":
		return true
	}
	return false
}

func (j *judge) isTarget(id resource.Identity) bool {
	_, ok := j.targets[id]
	return ok
}

// podNamespaces are the namespaces that hold a Pod target or a target that has Pods, sorted.
func (j *judge) podNamespaces() []string {
	var out []string
	for id := range j.targets {
		if (isPodID(id) || hasPods(id)) && !slices.Contains(out, id.Namespace) {
			out = append(out, id.Namespace)
		}
	}
	slices.Sort(out)
	return out
}

// readiness is obj's readiness in the window: by opts.Readiness, except that a Job that failed is
// Failed even when Jobs are not waited for.
func (j *judge) readiness(obj *unstructured.Unstructured) readiness.Result {
	r := readiness.Compute(obj, j.opts.Readiness)
	if r.State != readiness.Failed && isJob(obj) && !j.opts.Readiness.WaitForJobs {
		o := j.opts.Readiness
		o.WaitForJobs = true
		if f := readiness.Compute(obj, o); f.State == readiness.Failed {
			return f
		}
	}
	return r
}

// target judges a target as seen at now (obj nil: absent).
func (j *judge) target(id resource.Identity, obj *unstructured.Unstructured, now time.Time) (*RegressionError, notice) {
	t := j.targets[id]
	if t == nil {
		return nil, notice{}
	}
	r := readiness.Result{State: readiness.InProgress, Message: "not found"}
	if obj != nil {
		r = j.readiness(obj)
		if hasPods(id) {
			t.selector = podSelector(obj)
		}
	}
	var n notice
	if (t.seen && r.Message != t.result.Message) || (!t.seen && r.State != readiness.Ready) {
		n = notice{id: &id, result: r}
	}
	wasReady := t.result.State == readiness.Ready && t.seen
	t.seen = true
	t.result = r
	switch r.State {
	case readiness.Ready:
		t.wasReady = true
		t.notReadySince = time.Time{}
	case readiness.Failed:
		what := "failed: " + r.Message
		if wasReady {
			what = "was ready, now failed: " + r.Message
		}
		return j.regression(id, what, now, true), n
	default:
		if t.notReadySince.IsZero() {
			t.notReadySince = now
		}
	}
	return nil, n
}

// unseen judges every target not seen when the first lists are done as absent.
func (j *judge) unseen(now time.Time) []notice {
	var out []notice
	for _, id := range j.sortedTargets() {
		if !j.targets[id].seen {
			_, n := j.target(id, nil, now)
			out = append(out, n)
		}
	}
	return out
}

func (j *judge) sortedTargets() []resource.Identity { return j.order }

// nextExpiry is when the first target not ready runs out of tolerance.
func (j *judge) nextExpiry() (time.Time, bool) {
	var at time.Time
	for _, t := range j.targets {
		if t.notReadySince.IsZero() {
			continue
		}
		if e := t.notReadySince.Add(j.opts.Tolerance); at.IsZero() || e.Before(at) {
			at = e
		}
	}
	return at, !at.IsZero()
}

// expired returns the regression of the first target not ready for longer than the tolerance at
// now, if any.
func (j *judge) expired(now time.Time) *RegressionError {
	for _, id := range j.sortedTargets() {
		t := j.targets[id]
		if t.notReadySince.IsZero() || now.Before(t.notReadySince.Add(j.opts.Tolerance)) {
			continue
		}
		what := fmt.Sprintf("not ready for more than %s: %s", j.opts.Tolerance, t.result.Message)
		if t.wasReady {
			what = "was ready, now " + what
		}
		return j.regression(id, what, t.notReadySince, false)
	}
	return nil
}

// final judges the targets at the window's end: every one must be ready. With once (a window
// judged once), the Pods are judged too: none Failed, no container in CrashLoopBackOff.
func (j *judge) final(now time.Time, once bool) *RegressionError {
	if once {
		for _, p := range j.sortedPods() {
			owner, ok := j.owner(p.obj)
			if !ok || !judged(p.obj) {
				continue
			}
			if phase(p.obj) == "Failed" {
				return j.podFailed(owner, p.obj, now)
			}
			for _, c := range restartsOf(p.obj) {
				if c.crashLoop {
					return j.podRegression(owner, p.obj, fmt.Sprintf("container %s is waiting in CrashLoopBackOff%s", c.name, c.last), c.name, c.at(now))
				}
			}
		}
	}
	for _, id := range j.sortedTargets() {
		t := j.targets[id]
		if t.result.State == readiness.Ready {
			continue
		}
		since := t.notReadySince
		if since.IsZero() {
			since = now
		}
		what := "not ready when the window ended: " + t.result.Message
		if t.result.State == readiness.Failed {
			what = "failed: " + t.result.Message
		}
		return j.regression(id, what, since, false)
	}
	return nil
}

// pod judges a Pod of a watched namespace as seen at now; initial says it was in the first list.
func (j *judge) pod(obj *unstructured.Unstructured, gone, initial bool, now time.Time) (*RegressionError, notice) {
	uid := obj.GetUID()
	if gone {
		delete(j.pods, uid)
		return nil, notice{}
	}
	p := j.pods[uid]
	if p == nil {
		// A Pod first seen in the watch's first list was there before the window: its restarts
		// are counted from what they were then; any later one is new, counted from 0.
		p = &podState{base: map[string]int64{}, told: map[string]int64{}}
		if initial {
			for _, c := range restartsOf(obj) {
				p.base[c.name] = c.count
			}
		}
		j.pods[uid] = p
	}
	p.obj = obj
	owner, ok := j.owner(obj)
	if !ok || !judged(obj) || j.opts.For <= 0 {
		return nil, notice{}
	}
	if phase(obj) == "Failed" {
		return j.podFailed(owner, obj, now), notice{}
	}
	var n notice
	for _, c := range restartsOf(obj) {
		seen := c.count - p.base[c.name]
		if c.crashLoop && seen < 1 {
			seen = 1
		}
		if seen > int64(j.opts.Restarts) {
			what := fmt.Sprintf("container %s restarted %d time(s) in the window (%d allowed)", c.name, seen, j.opts.Restarts)
			if c.crashLoop {
				what += ", waiting in CrashLoopBackOff"
			}
			return j.podRegression(owner, obj, what+c.last, c.name, c.at(now)), n
		}
		if seen > p.told[c.name] {
			p.told[c.name] = seen
			id := resource.IdentityOf(obj)
			n = notice{id: &id, result: readiness.Result{State: readiness.Compute(obj, j.opts.Readiness).State,
				Message: fmt.Sprintf("container %s restarted %d time(s) in the window (%d allowed)%s", c.name, seen, j.opts.Restarts, c.last)}}
		}
	}
	return nil, n
}

// owner is the target obj is a Pod of: itself when it is one, else the first target whose
// selector matches its labels in its namespace.
func (j *judge) owner(pod *unstructured.Unstructured) (resource.Identity, bool) {
	id := resource.IdentityOf(pod)
	if j.isTarget(id) {
		return id, true
	}
	set := labels.Set(pod.GetLabels())
	for _, tid := range j.sortedTargets() {
		t := j.targets[tid]
		if tid.Namespace == id.Namespace && t.selector != nil && t.selector.Matches(set) {
			return tid, true
		}
	}
	return resource.Identity{}, false
}

// judged says whether a Pod's own state is judged: not when it is being deleted (a deleted Pod
// may end Failed), nor when a Job owns it (the Job's readiness judges its Pods).
func judged(pod *unstructured.Unstructured) bool {
	if pod.GetDeletionTimestamp() != nil {
		return false
	}
	for _, ref := range pod.GetOwnerReferences() {
		if ref.Kind == "Job" && strings.HasPrefix(ref.APIVersion, "batch/") {
			return false
		}
	}
	return true
}

func (j *judge) podFailed(owner resource.Identity, pod *unstructured.Unstructured, now time.Time) *RegressionError {
	return j.podRegression(owner, pod, "failed: "+podFailureReason(pod), "", now)
}

func (j *judge) podRegression(owner resource.Identity, pod *unstructured.Unstructured, what, container string, at time.Time) *RegressionError {
	id := resource.IdentityOf(pod)
	return &RegressionError{Object: owner, Pod: &id, What: what, Since: at, event: true, container: container}
}

// regression is a target's regression; its Pod, when it has Pods, is the newest one not ready.
func (j *judge) regression(id resource.Identity, what string, since time.Time, event bool) *RegressionError {
	reg := &RegressionError{Object: id, What: what, Since: since, event: event}
	var worst *unstructured.Unstructured
	for _, p := range j.sortedPods() {
		if owner, ok := j.owner(p.obj); ok && owner == id && p.obj.GetDeletionTimestamp() == nil &&
			readiness.Compute(p.obj, readiness.Options{}).State != readiness.Ready {
			worst = p.obj
		}
	}
	if worst != nil {
		pid := resource.IdentityOf(worst)
		reg.Pod = &pid
	}
	return reg
}

// regressedPod returns the regressed Pod as last seen; nil when there is none.
func (j *judge) regressedPod(reg *RegressionError) *unstructured.Unstructured {
	if reg.Pod == nil {
		return nil
	}
	for _, p := range j.pods {
		if resource.IdentityOf(p.obj) == *reg.Pod {
			return p.obj
		}
	}
	return nil
}

// sortedPods returns the Pods seen, oldest first.
func (j *judge) sortedPods() []*podState {
	out := make([]*podState, 0, len(j.pods))
	for _, p := range j.pods {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *podState) int {
		if c := a.obj.GetCreationTimestamp().Compare(b.obj.GetCreationTimestamp().Time); c != 0 {
			return c
		}
		return strings.Compare(a.obj.GetName(), b.obj.GetName())
	})
	return out
}

// podSelector is the selector of a workload's Pods: its spec.selector (a label selector, or a
// ReplicationController's map of labels); nil when it has none.
func podSelector(obj *unstructured.Unstructured) labels.Selector {
	m, found, _ := unstructured.NestedMap(obj.Object, "spec", "selector")
	if !found || len(m) == 0 {
		return nil
	}
	if obj.GetKind() == "ReplicationController" {
		set := labels.Set{}
		for k, v := range m {
			s, _ := v.(string)
			set[k] = s
		}
		return labels.SelectorFromSet(set)
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil || sel.Empty() {
		return nil
	}
	return sel
}

func phase(pod *unstructured.Unstructured) string {
	p, _, _ := unstructured.NestedString(pod.Object, "status", "phase")
	return p
}

// containerRestarts is what the window counts of one container.
type containerRestarts struct {
	name      string
	count     int64
	crashLoop bool
	// last says how its previous instance ended, ", last exit code 1 (Error)"; empty when it
	// did not.
	last string
	// finished is when its previous instance ended; zero when unknown.
	finished time.Time
}

// at is when the container's previous instance ended, or now when that is unknown.
func (c containerRestarts) at(now time.Time) time.Time {
	if c.finished.IsZero() {
		return now
	}
	return c.finished
}

func restartsOf(pod *unstructured.Unstructured) []containerRestarts {
	var out []containerRestarts
	for _, m := range containerStatusMaps(pod) {
		c := containerRestarts{name: str(m["name"])}
		c.count, _, _ = unstructured.NestedInt64(m, "restartCount")
		reason, _, _ := unstructured.NestedString(m, "state", "waiting", "reason")
		c.crashLoop = reason == "CrashLoopBackOff"
		if t, found, _ := unstructured.NestedMap(m, "lastState", "terminated"); found {
			code, _, _ := unstructured.NestedInt64(t, "exitCode")
			c.last = fmt.Sprintf(", last exit code %d", code)
			if r := str(t["reason"]); r != "" {
				c.last += " (" + r + ")"
			}
			if at, err := time.Parse(time.RFC3339, str(t["finishedAt"])); err == nil {
				c.finished = at
			}
		}
		out = append(out, c)
	}
	return out
}
