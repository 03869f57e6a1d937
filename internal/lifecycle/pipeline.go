package lifecycle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// pipeline is the revision pipeline, the steps of an install, upgrade or rollback (and of the
// finishing of an interrupted one) in the order they run. carryOut runs them, one after the
// other, over one pass; the first is the operation's own (a revisionOp), the rest are the same
// for all. A step that ends the pass (a client dry run after render, a server dry run after
// preview) sets pass.done.
var pipeline = []struct {
	name string
	run  func(*operation, context.Context, *pass) error
}{
	{"read", (*operation).readStep},           // what the revision starts from, and its policy
	{"render", (*operation).renderStep},       // its contents and its pending record
	{"namespace", (*operation).namespaceStep}, // an install's namespace, created if asked
	{"survey", (*operation).surveyStep},       // the live objects, a server dry run, ownership
	{"plan", (*operation).planStep},           // the steps that carry it out
	{"preflight", (*operation).preflightStep}, // what would block the plan's requests
	{"validate", (*operation).validateStep},   // what the dry run refused
	{"preview", (*operation).previewStep},     // a server dry run says what it would do
	{"execute", (*operation).executeStep},     // record, apply, wait, watch; undo on failure
}

// A revisionOp is what the pipeline carries out: an install, an upgrade, a rollback, or the
// finishing of an interrupted one (install.go, upgrade.go, rollback.go, recover.go). Its read
// step reads what the new revision starts from and says what it is made of and how it is
// carried out; the pipeline does the rest.
type revisionOp interface {
	read(ctx context.Context, d *operation) (draft, policy, error)
}

// draft is what an operation's read step decides of its new revision.
type draft struct {
	name, namespace string
	// number is the new revision's.
	number int
	// render, when set, makes the revision's contents from a chart; otherwise they are contents
	// (a rollback's: an earlier revision's).
	render   *renderInput
	contents contents
	// entry is what the record says besides its contents.
	entry entry
	// previous are the deployed and the last revision (either may be nil) whose objects the new
	// revision's replace; replaced is the uninstalled revision an install takes the name of.
	previous []*release.Release
	replaced int
	// recorded is the revision an interrupted operation recorded, carried out as it is (no
	// render, no new record); journal, when set, is its journal, whose plan goes on.
	recorded *release.Release
	journal  *release.Journal
	// namespace says what is done of the release namespace first (an install's).
	ensureNamespace, createNamespace bool
	// namespaceExists, when set, answers whether the namespace exists, asked by the read step.
	namespaceExists func() (bool, error)
}

// renderInput is what a revision is rendered from.
type renderInput struct {
	chart     *chartv2.Chart
	values    map[string]any
	rendering Rendering
	options   chart.RenderOptions
}

// pass is one run of the pipeline: what each step learns, for the steps after it.
type pass struct {
	op revisionOp
	draft
	policy
	rev revision
	// createdNamespace says the namespace step created the release namespace: a refusal before
	// the first change deletes it again.
	createdNamespace bool
	p                *prepared
	s                survey
	plan             *plan.Plan
	// executing says the execute step began: the revision may be recorded.
	executing bool
	done      bool
}

// carryOut runs the pipeline for op and returns its revision: the one recorded (or, for a dry
// run, the one it would record); nil when it was refused before its execution began.
func (o *operation) carryOut(ctx context.Context, op revisionOp) (*release.Release, error) {
	ps := &pass{op: op}
	for _, step := range pipeline {
		if err := step.run(o, ctx, ps); err != nil {
			if ps.executing {
				return ps.rev.rel, err
			}
			o.refused(ctx, ps)
			return nil, err
		}
		if ps.done {
			break
		}
	}
	return ps.rev.rel, nil
}

// refused undoes what a pass refused before its first change did anyway: the namespace it
// created goes, within a grace of its own.
func (o *operation) refused(ctx context.Context, ps *pass) {
	if !ps.createdNamespace {
		return
	}
	dctx, cancel := o.writeContext(ctx)
	defer cancel()
	o.executeOnce(dctx, ps.policy.op, ps.number, namespacePlan(plan.DeleteNamespace, ps.namespace), &runner{d: o})
}

// readStep is the operation's own: what its revision starts from, and its policy.
func (o *operation) readStep(ctx context.Context, ps *pass) error {
	var err error
	ps.draft, ps.policy, err = ps.op.read(ctx, o)
	return err
}

// recordedContents are the objects and CRDs of recorded revision rel, carried out as it is.
func recordedContents(rel *release.Release) (objs, crds []*unstructured.Unstructured, err error) {
	objs, err = resource.ParseManifest(rel.Manifest)
	if err != nil {
		return nil, nil, fmt.Errorf("release %s revision %d: recorded manifest: %w", rel.Name, rel.Version, err)
	}
	crds, err = crdObjects(rel)
	return objs, crds, err
}

// renderStep makes the revision's contents (rendered, or an earlier revision's) and its pending
// record, the one place a record is made (pendingRevision); a recorded revision is taken as it
// is. A client dry run ends here. A record that cannot be stored is refused now, not when the
// API server refuses it once the operation is under way.
func (o *operation) renderStep(ctx context.Context, ps *pass) error {
	if rel := ps.recorded; rel != nil {
		objs, crds, err := recordedContents(rel)
		if err != nil {
			return err
		}
		ps.rev = revision{rel: rel, recorded: true, previous: ps.previous, crds: crds, objects: objs}
		return nil
	}
	c := ps.contents
	if r := ps.render; r != nil {
		var err error
		if c, err = o.render(ctx, r.chart, r.values, r.rendering, r.options); err != nil {
			return err
		}
	}
	var err error
	if ps.rev, err = o.pendingRevision(ps.policy.op, ps.name, ps.namespace, ps.number, c, ps.entry); err != nil {
		return err
	}
	ps.rev.previous, ps.rev.replaced = ps.previous, ps.replaced
	if ps.dryRun == ClientDryRun {
		if s := ps.said.clientDryRun; s != "" {
			ps.rev.rel.Info.Description = s
		}
		ps.done = true
		return nil
	}
	return o.Store.Fits(ps.rev.rel)
}

// namespaceStep checks that an install's namespace exists, creating it when asked (not for a
// dry run), as a plan of its own run before the install's, whose dry run needs the namespace.
func (o *operation) namespaceStep(ctx context.Context, ps *pass) error {
	if !ps.ensureNamespace {
		return nil
	}
	var err error
	ps.createdNamespace, err = o.ensureNamespace(ctx, ps.namespace, ps.createNamespace && ps.dryRun == NoDryRun, ps.namespaceExists)
	return err
}

// surveyStep reads the cluster before any change: the objects prepared, the recorded objects of
// the revisions replaced, the live objects, the CRDs to apply, a server-side dry run of what
// changes; and checks ownership. A journalled plan that goes on is checked against what its
// journal may touch, and only the live objects' metadata is read.
func (o *operation) surveyStep(ctx context.Context, ps *pass) error {
	rev, pol := ps.rev, ps.policy
	crds := rev.crds
	if ps.journal == nil {
		crds = crdsFor(pol.crds, pol.op, rev.crds)
	}
	p, err := prepare(o.Cluster, rev.rel.Name, rev.rel.Namespace, crds, rev.objects)
	if err != nil {
		return skippedCRDs(err, pol.crds, pol.op, rev.crds)
	}
	ps.p = p
	for i, prev := range rev.previous {
		if slices.ContainsFunc(rev.previous[:i], func(p *release.Release) bool { return p != nil && prev != nil && p.Version == prev.Version }) {
			continue // the deployed revision is the last one: its manifest is read once
		}
		objs, err := o.recordedObjects(prev)
		if err != nil {
			return err
		}
		p.facts.Record(objs)
	}
	if j := ps.journal; j != nil {
		return o.surveyJournalled(ctx, ps, j)
	}
	if ps.dryRun == NoDryRun {
		// The preflight's reads are answered, and the revision's pending record encoded, while
		// the cluster is surveyed.
		o.preflightAhead(ctx, pol.op)
		if !rev.recorded {
			o.Store.EncodeAhead(rev.rel)
		}
	}
	ps.s = surveyCluster(ctx, o.Cluster, p, p.facts.RecordedObjects(),
		surveyOptions{replaceCRDs: pol.crds.of(pol.op) == CRDsCreateReplace, forceReplace: pol.forceReplace, readAll: rev.recorded})
	if ps.s.liveErr != nil {
		return ps.s.liveErr
	}
	return checkOwnership(rev.rel.Name, rev.rel.Namespace, p.objects, ps.s.crds, &p.facts, pol.takeOwnership)
}

// surveyJournalled is the survey of the journalled plan of j that goes on from its first step
// not done: nothing is surveyed, validated or planned again, and the deletes go by the UIDs the
// plan recorded. The journal is input: what its plan may touch is checked (checkJournal), and
// ownership again as the policy grants it.
func (o *operation) surveyJournalled(ctx context.Context, ps *pass, j *release.Journal) error {
	rel, pol, p := ps.rev.rel, ps.policy, ps.p
	scope, err := scopeOf(o.Cluster, pol.op, rel, slices.Concat(p.crds, p.objects), p.facts.RecordedObjects())
	if err != nil {
		return err
	}
	if err := checkJournal(j, scope, journalOptions(pol.wait, pol.noHooks, pol.takeOwnership)); err != nil {
		return err
	}
	before, err := live(ctx, o.Cluster, p.objects)
	if err != nil {
		return err
	}
	ps.s = survey{}
	p.facts.Survey(before, nil)
	return checkOwnership(rel.Name, rel.Namespace, p.objects, nil, &p.facts, pol.takeOwnership)
}

// planStep builds the plan: the object steps plan.Build orders, in the batches the chart
// declares, within the record, hook, adopt and watch steps. A journalled plan is the journal's.
func (o *operation) planStep(ctx context.Context, ps *pass) error {
	if ps.journal != nil {
		ps.plan = ps.journal.Plan
		return nil
	}
	rev, pol, p, s := ps.rev, ps.policy, ps.p, ps.s
	rel := rev.rel
	steps := revisionSteps{op: pol.op, revision: rel.Version, create: !rev.recorded,
		adopted: identities(adoptedFromHelm(slices.Concat(s.crds, p.objects), &p.facts)), replaced: rev.replaced}
	for _, prev := range rev.previous {
		if prev != nil && prev.Info.Status == release.StatusDeployed && prev.Version != rel.Version && !slices.Contains(steps.superseded, prev.Version) {
			steps.superseded = append(steps.superseded, prev.Version)
		}
	}
	if w := pol.wait.Watch; w.For > 0 && len(p.objects) > 0 {
		steps.watch = &plan.Window{For: w.For, Tolerance: w.Tolerance, Restarts: w.Restarts}
		steps.watched = identities(p.objects)
	}
	order, err := o.batches(rel, pol.wait)
	if err != nil {
		return err
	}
	ps.plan, err = o.revisionPlan(plan.Input{CRDs: s.crds, Desired: p.objects, Recorded: p.facts.RecordedObjects(), Live: p.facts.Live(),
		Wait: pol.wait.Wait, Late: p.lateIdentities(), Batches: order, Replace: s.replaced}, steps, rel, pol.noHooks)
	if err == nil {
		p.facts.Planned(ps.plan)
	}
	return err
}

// preflightStep runs berth doctor's checks of the plan's requests before its first change. What
// would block them is named before what the dry run refused: a webhook that cannot answer is
// the reason of both. A dry run and a journalled plan that goes on have none.
func (o *operation) preflightStep(ctx context.Context, ps *pass) error {
	if ps.dryRun != NoDryRun || ps.journal != nil {
		return nil
	}
	return o.preflight(ctx, ps.policy.op, ps.rev.rel, ps.plan, &ps.p.facts)
}

// validateStep refuses what the survey's dry run refused: a CRD or an object the API server
// would not take.
func (o *operation) validateStep(ctx context.Context, ps *pass) error {
	return errors.Join(ps.s.crdErr, ps.s.validationErr)
}

// previewStep says, for a server dry run, what the operation would do, and ends the pass.
func (o *operation) previewStep(ctx context.Context, ps *pass) error {
	if ps.dryRun != ServerDryRun {
		return nil
	}
	ps.done = true
	rel, pol := ps.rev.rel, ps.policy
	rel.Info.Description = cmp.Or(pol.said.dryRun, "Dry run complete")
	o.runs.plan(ps.plan)
	events := hookEvents(pol.op)
	return pol.preview.fill(ctx, o.Cluster, previewInput{
		op: pol.op, rel: rel, previous: ps.rev.previous, plan: ps.plan, facts: &ps.p.facts,
		pre: events[0], post: events[1], noHooks: pol.noHooks,
	})
}

// executeStep carries the plan out: it journals it, records the revision pending, runs its
// steps and records the outcome; a failure is recorded and undone per the policy (undo.go).
func (o *operation) executeStep(ctx context.Context, ps *pass) error {
	ps.executing = true
	rel, pol, p, s, pl := ps.rev.rel, ps.policy, ps.p, ps.s, ps.plan
	run := &runner{d: o, rel: rel, objects: &p.facts, success: pol.said.success, failure: pol.said.failure,
		readiness: o.engineOptions(nil, pol.wait).Readiness}
	if !ps.rev.recorded {
		run.historyMax = pol.historyMax
	}
	var cleanup []*unstructured.Unstructured
	if pol.undo.cleanupOnFail {
		cleanup = toCreate(p.objects, &p.facts)
	}
	// Time is kept for what a failure does: undo it, delete what it created.
	fwd, cancelFwd := pol.wait.forward(ctx, pol.undo.may() || cleanup != nil)
	defer cancelFwd()
	var err error
	if pl, err = o.begin(fwd, pol.op, rel.Version, pl, journalOptions(pol.wait, pol.noHooks, pol.takeOwnership)); err == nil {
		if ps.journal != nil {
			o.resuming(pol.op, rel.Version, pl)
		}
		opts := o.engineOptions(&p.facts, pol.wait)
		opts.Unchanged = s.unchanged(p, pol.takeOwnership)
		_, err = o.execute(fwd, pol.op, rel.Version, pl, run, opts)
	}
	if err != nil {
		if pol.undo.onlyApplying && !failedApplying(err) {
			cleanup = nil
		}
		return o.fail(ctx, run, pl, err, cleanup, pol.undo.of(err))
	}
	return nil
}

// resuming tells that the journalled plan pl of the interrupted op of revision goes on, and
// which of its steps are left.
func (o *operation) resuming(op release.Operation, revision int, pl *plan.Plan) {
	var left []string
	for _, step := range pl.Steps {
		if !o.Done(step.ID) {
			left = append(left, step.ID)
		}
	}
	o.notify(fmt.Sprintf("the %s of revision %d goes on as its journal recorded it: %d of %d steps left: %s",
		op, revision, len(left), len(pl.Steps), strings.Join(left, ", ")))
}
