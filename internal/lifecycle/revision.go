package lifecycle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
)

// Install, upgrade and rollback are one pipeline: each makes a pending revision (its record and
// objects) and carries it out the same way, planRevision and then runRevision. An install is the
// replacement of nothing; an upgrade and a rollback replace the objects of the deployed and the
// last revisions. What differs between them is their policy: what they read first, the
// revision's number and contents, what it supersedes, what its record says, and how a failure is
// undone.

// revision is what the pipeline carries out: the new revision's record, the revisions whose
// objects it replaces, and its objects.
type revision struct {
	// rel is the new revision, pending.
	rel *release.Release
	// recorded says rel is recorded already: an interrupted operation being finished.
	recorded bool
	// previous are the deployed and the last revision (either may be nil), whose objects the new
	// revision's replace; none for an install.
	previous []*release.Release
	// replaced is the uninstalled revision whose name an install takes (replace), marked
	// superseded once the new one is recorded; 0 for none.
	replaced int
	// crds are the objects of the charts' crds/ directories; objects are the release's own.
	crds, objects []*unstructured.Unstructured
}

// policy is how an operation carries its revision through the pipeline.
type policy struct {
	op release.Operation
	settings
	said descriptions
	// undo is what a failure does besides recording it.
	undo undo
}

// settings are what the operation's caller asked of how the revision is carried out.
type settings struct {
	wait          WaitOptions
	dryRun        DryRun
	noHooks       bool
	takeOwnership bool
	// crds says what is done with the revision's crds (the default: Helm's for the operation);
	// forceReplace replaces the objects whose changes the API server refuses as immutable.
	crds         CRDPolicy
	forceReplace bool
	// historyMax bounds the revisions kept once the new one is recorded; 0 keeps all.
	historyMax int
	// preview, when set with a server dry run, is filled with what the operation would do.
	preview *Preview
}

// descriptions are what the revision's record says at the end: on success, on failure (before
// the cause), and for a server dry run.
type descriptions struct {
	success, failure, dryRun string
}

// planned is a revision made ready to carry out: everything known before the first change.
type planned struct {
	revision
	policy
	p    *prepared
	s    survey
	plan *plan.Plan
	// journalled says plan is the journalled plan of the interrupted operation being finished:
	// it goes on from its first step not done.
	journalled bool
}

// carryOut is the revision pipeline: it plans rev (planRevision) and then executes the plan, or
// for a server dry run, says what it would do (runRevision).
func (d *operation) carryOut(ctx context.Context, rev revision, pol policy) error {
	pr, err := d.planRevision(ctx, rev, pol)
	if err != nil {
		return err
	}
	return d.runRevision(ctx, pr)
}

// planRevision prepares the revision's objects, surveys the cluster (the live objects of the
// revision and of those it replaces, the CRDs to apply, a server-side dry run of what changes),
// checks ownership, builds the plan and runs the preflight: everything before the first change.
func (d *operation) planRevision(ctx context.Context, rev revision, pol policy) (*planned, error) {
	rel := rev.rel
	if !rev.recorded {
		// A record that cannot be stored is refused before anything changes, not when the
		// API server refuses it once the operation is under way.
		if err := release.Fits(rel); err != nil {
			return nil, err
		}
	}
	p, err := prepare(d.Cluster, rel.Name, rel.Namespace, crdsFor(pol.crds, pol.op, rev.crds), rev.objects)
	if err != nil {
		return nil, skippedCRDs(err, pol.crds, pol.op, rev.crds)
	}
	var recorded []*unstructured.Unstructured
	for i, prev := range rev.previous {
		if slices.ContainsFunc(rev.previous[:i], func(p *release.Release) bool { return p != nil && prev != nil && p.Version == prev.Version }) {
			continue // the deployed revision is the last one: its manifest is read once
		}
		objs, err := d.recordedObjects(prev)
		if err != nil {
			return nil, err
		}
		recorded = union(recorded, objs)
	}
	s := surveyCluster(ctx, d.Cluster, p, recorded,
		surveyOptions{replaceCRDs: pol.crds.of(pol.op) == CRDsCreateReplace, forceReplace: pol.forceReplace, readAll: rev.recorded})
	if s.liveErr != nil {
		return nil, s.liveErr
	}
	before, crds := s.before, s.crds
	if err := checkOwnership(rel.Name, rel.Namespace, p.objects, crds, before, pol.takeOwnership); err != nil {
		return nil, err
	}
	steps := revisionSteps{op: pol.op, revision: rel.Version, create: !rev.recorded,
		adopted: identities(adoptedFromHelm(slices.Concat(crds, p.objects), before)), replaced: rev.replaced}
	for _, prev := range rev.previous {
		if prev != nil && prev.Info.Status == release.StatusDeployed && prev.Version != rel.Version && !slices.Contains(steps.superseded, prev.Version) {
			steps.superseded = append(steps.superseded, prev.Version)
		}
	}
	if w := pol.wait.Watch; w.For > 0 && len(p.objects) > 0 {
		steps.watch = &plan.Window{For: w.For, Tolerance: w.Tolerance, Restarts: w.Restarts}
		steps.watched = identities(p.objects)
	}
	order, err := d.batches(rel, pol.wait)
	if err != nil {
		return nil, err
	}
	pl, err := d.revisionPlan(plan.Input{CRDs: crds, Desired: p.objects, Recorded: recorded, Live: before, Wait: pol.wait.Wait,
		Late: p.lateIdentities(), Batches: order, Replace: s.replaced}, steps, rel, pol.noHooks)
	if err != nil {
		return nil, err
	}
	if pol.dryRun == NoDryRun {
		// What would block the plan's requests is named before what the dry run refused: a
		// webhook that cannot answer is the reason of both.
		objects := byID(recorded)
		maps.Copy(objects, p.byID)
		if err := d.preflight(ctx, pol.op, rel, pl, objects, before, s.applied); err != nil {
			return nil, err
		}
	}
	if err := errors.Join(s.crdErr, s.validationErr); err != nil {
		return nil, err
	}
	return &planned{revision: rev, policy: pol, p: p, s: s, plan: pl}, nil
}

// runRevision executes the planned revision: it records it pending, runs its plan and records
// the outcome; a failure is recorded and undone per the policy. A server dry run only says what
// it would do.
func (d *operation) runRevision(ctx context.Context, pr *planned) error {
	rel, pol, p, s, pl := pr.rel, pr.policy, pr.p, pr.s, pr.plan
	if pol.dryRun == ServerDryRun {
		rel.Info.Description = cmp.Or(pol.said.dryRun, "Dry run complete")
		d.runs.plan(pl)
		events := hookEvents(pol.op)
		return pol.preview.fill(ctx, d.Cluster, previewInput{
			op: pol.op, rel: rel, previous: pr.previous, plan: pl, p: p, before: s.before, applied: s.applied,
			pre: events[0], post: events[1], noHooks: pol.noHooks,
		})
	}
	run := &runner{d: d, rel: rel, objects: p.byID, success: pol.said.success, failure: pol.said.failure,
		readiness: d.engineOptions(nil, nil, pol.wait).Readiness}
	if !pr.recorded {
		run.historyMax = pol.historyMax
	}
	var cleanup []*unstructured.Unstructured
	if pol.undo.cleanupOnFail {
		cleanup = toCreate(p.objects, s.before)
	}
	// Time is kept for what a failure does: undo it, delete what it created.
	fwd, cancelFwd := pol.wait.forward(ctx, pol.undo.may() || cleanup != nil)
	defer cancelFwd()
	var err error
	if pl, err = d.begin(fwd, pol.op, rel.Version, pl, journalOptions(pol.wait, pol.noHooks, pol.takeOwnership)); err == nil {
		if pr.journalled {
			d.resuming(pol.op, rel.Version, pl)
		}
		opts := d.engineOptions(p, s.before, pol.wait)
		opts.Unchanged = s.unchanged(p, pol.takeOwnership)
		_, err = d.execute(fwd, pol.op, rel.Version, pl, run, opts)
	}
	if err != nil {
		if pol.undo.onlyApplying && !failedApplying(err) {
			cleanup = nil
		}
		return d.fail(ctx, run, pl, err, cleanup, pol.undo.of(err))
	}
	return nil
}

// resuming tells that the journalled plan pl of the interrupted op of revision goes on, and
// which of its steps are left.
func (d *operation) resuming(op release.Operation, revision int, pl *plan.Plan) {
	var left []string
	for _, step := range pl.Steps {
		if !d.Done(step.ID) {
			left = append(left, step.ID)
		}
	}
	d.notify(fmt.Sprintf("the %s of revision %d goes on as its journal recorded it: %d of %d steps left: %s",
		op, revision, len(left), len(pl.Steps), strings.Join(left, ", ")))
}
