package cluster

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
)

// Create creates obj (already normalized) and returns it as stored. Unlike Apply, it fails when
// the object exists: a hook is a new run, never an update of an old one.
func (c *Client) Create(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	id := resource.IdentityOf(obj)
	ri, _, err := c.resourceFor(id, obj.GroupVersionKind().Version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	out, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, fmt.Errorf("%s: create: %w", id, err)
	}
	return out, nil
}

// HookOptions change how a hook is run and what is reported of it.
type HookOptions struct {
	// Progress is told every time what berth knows of the hook object changes; may be nil.
	Progress Progress
	// PodFailed is told once of each Pod of a Job hook that failed; may be nil.
	PodFailed func(PodFailure)
	// Logs asks for the logs of the hook's Pods in the report even when the hook succeeds (a
	// hook that did not succeed always has them).
	Logs bool
	// LogLine, when set, is told each line the hook's containers write, from the moment each
	// starts until the hook's outcome, as the kubelet serves it: for a Pod hook its own
	// containers, for a Job those of each of its Pods. A client without Pod logs tells nothing.
	LogLine func(LogLine)
	// Resume follows the hook object that exists (a run an interrupted operation began), by its
	// UID, instead of creating another; it creates one when none exists.
	Resume bool
	// Afterwards gives the context the report is read in once the hook's outcome is known or
	// ctx ended: it may outlive ctx (a hook that did not finish by the deadline is reported
	// after it), within its caller's grace. Nil reads the report in ctx.
	Afterwards func(ctx context.Context) (context.Context, context.CancelFunc)
}

// PodFailure is a Pod of a Job hook that failed, and whether the Job controller retries it.
type PodFailure struct {
	// Pod is the failed Pod; its name is empty when the Pod was gone before berth could read it.
	Pod resource.Identity
	// Reason says why: "Evicted: ...", "exit code 1 (Error)", ...
	Reason string
	// Attempt is the failed attempt's number, from 1; Attempts is backoffLimit+1.
	Attempt, Attempts int
	// Retried says whether the Job controller starts another Pod (the Job has not failed).
	Retried bool
}

// HookRun is what berth observed of one run of a hook.
type HookRun struct {
	// Created is the object as its create returned it (or as it was found, with Resume); nil
	// when the create failed.
	Created *unstructured.Unstructured
	// Result is the outcome: Ready (succeeded), Failed, or InProgress when the wait ended first.
	Result readiness.Result
	// Gone says the object was deleted before it finished.
	Gone bool
	// Report describes the run's Job, Pods, events and logs; set when the hook did not succeed,
	// or when logs were asked for.
	Report *HookReport
}

// RunHook creates the hook object obj (already normalized) and follows it, by UID, to its outcome:
// a Job completed or failed, a Pod succeeded or failed; any other kind has its outcome once
// created. The watch starts before the creation, so every change of the new object is seen, even
// of a Job that finishes and is deleted at once (ttlSecondsAfterFinished: 0). An object deleted
// before it finished is a failure that says what was last seen of it. Each failed Pod of a Job is
// reported to opts.PodFailed as the Job's failure count grows. With opts.Resume, an object that
// exists is followed instead of created. The error is set when the create failed or ctx ended
// first; the run then holds what was seen.
func (c *Client) RunHook(ctx context.Context, obj *unstructured.Unstructured, opts HookOptions) (HookRun, error) {
	id := resource.IdentityOf(obj)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make(chan observation)
	synced, err := c.observe(wctx, []resource.Identity{id}, out)
	if err != nil {
		return HookRun{}, err
	}
	for waiting := true; waiting; {
		select {
		case o := <-out: // what existed before the creation does not matter, unless it is a refusal
			if o.refused != nil {
				return HookRun{}, fmt.Errorf("%s: watch: %w", id, o.refused)
			}
		case <-synced:
			waiting = false
		case <-ctx.Done():
			return HookRun{}, fmt.Errorf("%s: watch: %w", id, context.Cause(ctx))
		}
	}
	var created *unstructured.Unstructured
	if opts.Resume {
		// Read after the watch started: every later change of the run found is seen.
		live, err := c.Get(ctx, id)
		if err != nil {
			return HookRun{}, err
		}
		if live != nil && live.GetDeletionTimestamp() == nil {
			created = live
		}
	}
	if created == nil {
		if created, err = c.Create(ctx, obj); err != nil {
			return HookRun{}, err
		}
	}
	f := &follower{c: c, opts: opts, created: created, last: created, pods: map[string]*unstructured.Unstructured{}, reported: map[string]bool{}}
	if opts.LogLine != nil && c.podLogs != nil {
		f.logs = newLogFollower(wctx, c, opts.LogLine)
		switch {
		case isJob(created):
			f.logs.watchJobPods(created.GetNamespace(), string(created.GetUID()))
		case isPod(created):
			f.logs.note(created)
		}
	}
	run, err := f.follow(wctx, out)
	if f.logs != nil {
		f.logs.stop()
	}
	if run.Result.State != readiness.Ready || opts.Logs {
		rctx, rcancel := ctx, context.CancelFunc(func() {})
		if opts.Afterwards != nil {
			rctx, rcancel = opts.Afterwards(ctx)
		}
		defer rcancel()
		run.Report = f.report(rctx)
	}
	return run, err
}

// follower follows one created hook object.
type follower struct {
	c       *Client
	opts    HookOptions
	created *unstructured.Unstructured
	// last is the hook object as last seen.
	last *unstructured.Unstructured
	// pods are the hook's Pods as last seen, by UID, even when they are gone since.
	pods map[string]*unstructured.Unstructured
	// failures counts the failed Pods reported; reported holds their UIDs.
	failures int
	reported map[string]bool
	// logs follows the logs of the hook's containers; nil when they are not asked for.
	logs *logFollower
}

func (f *follower) follow(ctx context.Context, out <-chan observation) (HookRun, error) {
	id := resource.IdentityOf(f.created)
	last := hookOutcome(f.created)
	run := HookRun{Created: f.created, Result: last}
	if last.State != readiness.InProgress {
		return run, nil
	}
	for {
		select {
		case o := <-out:
			if o.refused != nil {
				return run, fmt.Errorf("%s: watch: %w (last seen: %s)", id, o.refused, last.Message)
			}
			if o.obj == nil || o.obj.GetUID() != f.created.GetUID() {
				continue // the absence noted before the creation was seen, or another object
			}
			f.last = o.obj
			if f.logs != nil && isPod(o.obj) {
				f.logs.note(o.obj)
			}
			r := hookOutcome(o.obj)
			f.notePods(ctx, o.obj, r.State)
			if o.gone && r.State == readiness.InProgress {
				run.Gone = true
				run.Result = readiness.Result{State: readiness.Failed,
					Message: fmt.Sprintf("deleted before it finished (last seen: %s)", last.Message)}
				return run, nil
			}
			if f.opts.Progress != nil && r.Message != last.Message {
				f.opts.Progress(id, r)
			}
			last = r
			run.Result = r
			if r.State != readiness.InProgress {
				return run, nil
			}
		case <-ctx.Done():
			return run, fmt.Errorf("%s: not finished: %w (last seen: %s)", id, context.Cause(ctx), last.Message)
		}
	}
}

// hookOutcome is a hook's outcome by the built-in rules: HIP-0025's readiness annotations do not
// apply to hooks.
func hookOutcome(obj *unstructured.Unstructured) readiness.Result {
	switch obj.GroupVersionKind().GroupKind().String() {
	case "Job.batch":
		return readiness.Builtin(obj, readiness.Options{WaitForJobs: true})
	case "Pod":
		// A hook Pod is done when it ran to completion, not when it is ready.
		if phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase"); phase != "Succeeded" && phase != "Failed" {
			return readiness.Result{State: readiness.InProgress, Message: "Pod is " + phaseOr(phase)}
		}
		return readiness.Builtin(obj, readiness.Options{})
	default:
		return readiness.Result{State: readiness.Ready, Message: "created"}
	}
}

func phaseOr(p string) string {
	if p == "" {
		return "Pending"
	}
	return p
}
