package lifecycle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/postrenderer"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/sequence"
)

// UpgradeOptions describe an upgrade.
type UpgradeOptions struct {
	Name      string
	Namespace string
	Chart     *chartv2.Chart
	Values    map[string]any
	// ValuesStrategy is --reuse-values, --reset-values or --reset-then-reuse-values.
	ValuesStrategy chart.ValuesStrategy
	WaitOptions
	// Install installs the release when it does not exist (--install).
	Install           bool
	CreateNamespace   bool
	TakeOwnership     bool
	RollbackOnFailure bool
	NoHooks           bool
	DryRun            DryRun
	// HistoryMax bounds the revisions kept; 0 keeps all.
	HistoryMax   int
	Description  string
	Capabilities *common.Capabilities
	// Labels are merged over the last revision's labels, as Helm's --labels: a label whose
	// value is "null" is removed.
	Labels map[string]string
	// PostRenderer rewrites the rendered templates, as Helm's --post-renderer.
	PostRenderer postrenderer.PostRenderer
	// CRDs says what is done with the CRDs of the chart's crds/ directories; by default,
	// nothing (an install that Install makes creates the missing ones).
	CRDs CRDPolicy
	// ForceReplace deletes and creates again the objects whose changes the API server refuses
	// as immutable, each by its UID and waited for until gone (Helm's --force-replace);
	// without it, such a change is an *ImmutableFieldError before anything changes.
	ForceReplace bool
	// CleanupOnFail deletes, when the upgrade fails, the objects it created (Helm's
	// --cleanup-on-fail): those that did not exist before it, each waited for until gone.
	CleanupOnFail bool
	// Rendering says how the chart is rendered.
	Rendering Rendering
	// InstallWith, when set, are the wait, hook and rollback options of the install that Install
	// makes, in place of the upgrade's (a Release's spec.install beside its spec.upgrade).
	InstallWith *InstallSettings

	// preview, when set with a server dry run, is filled with what the upgrade would do.
	preview *Preview
}

// Upgrade moves a release to a new revision of its chart and values: it applies the new
// objects, deletes by exact identity the ones that left the chart (unless kept) and records the
// new revision as deployed and the previous one as superseded.
func Upgrade(ctx context.Context, d Deps, o UpgradeOptions) (*Result, error) {
	o.Wait = o.Wait || o.RollbackOnFailure // as Install
	if err := o.Rendering.check(o.DryRun); err != nil {
		return nil, err
	}
	w := Wanted{Operation: release.OpUpgrade, Install: o.Install, Values: o.Values}
	if o.Chart != nil && o.Chart.Metadata != nil {
		w.ChartVersion = o.Chart.Metadata.Version
	}
	res, err := d.revisionOperation(ctx, w, o.Name, o.WaitOptions, o.DryRun, func(ctx context.Context, d *operation, a Action) (*release.Release, error) {
		if a == ActInstall {
			return d.install(ctx, o.install())
		}
		return d.upgrade(ctx, o)
	})
	var ni *NotInstalledError
	if errors.As(err, &ni) {
		ni.Namespace = o.Namespace
	}
	return res, err
}

// InstallSettings are the options of an install that an upgrade makes (UpgradeOptions.Install)
// when they differ from the upgrade's.
type InstallSettings struct {
	WaitOptions
	NoHooks           bool
	RollbackOnFailure bool
	CRDs              CRDPolicy
}

// install are the options of the install an upgrade with Install makes.
func (o UpgradeOptions) install() InstallOptions {
	io := InstallOptions{
		Name: o.Name, Namespace: o.Namespace, Chart: o.Chart, Values: o.Values, WaitOptions: o.WaitOptions,
		CreateNamespace: o.CreateNamespace, TakeOwnership: o.TakeOwnership, RollbackOnFailure: o.RollbackOnFailure,
		NoHooks: o.NoHooks, DryRun: o.DryRun, Description: o.Description, Capabilities: o.Capabilities,
		Labels: o.Labels, PostRenderer: o.PostRenderer, CRDs: o.CRDs, Rendering: o.Rendering, ForceReplace: o.ForceReplace,
		// As Helm's upgrade --install, the install takes the name of an uninstalled release.
		Replace: true,
		preview: o.preview,
	}
	if s := o.InstallWith; s != nil {
		io.WaitOptions, io.NoHooks, io.RollbackOnFailure, io.CRDs = s.WaitOptions, s.NoHooks, s.RollbackOnFailure, s.CRDs
		io.Wait = io.Wait || io.RollbackOnFailure
	}
	return io
}

// upgrade is Upgrade within its operation (or its dry run).
func (d *operation) upgrade(ctx context.Context, o UpgradeOptions) (*release.Release, error) {
	last, err := d.Store.Last(ctx, o.Name)
	if errors.Is(err, release.ErrNotFound) || (err == nil && last.Info.Status == release.StatusUninstalled) {
		return nil, &NotInstalledError{Release: o.Name, Namespace: o.Namespace} // Next decides to install
	}
	if err != nil {
		return nil, err
	}
	deployed, err := deployedOf(ctx, d.Store, last)
	if err != nil && !errors.Is(err, release.ErrNotFound) && !errors.Is(err, release.ErrNoDeployed) {
		return nil, err
	}
	current := last
	if deployed != nil {
		current = deployed
	}
	ch, vals, err := chart.UpgradeValues(o.Chart, chart.Previous{Chart: current.Chart, Config: current.Config}, o.Values, o.ValuesStrategy)
	if err != nil {
		return nil, err
	}
	rendered, err := chart.Render(ctx, ch, vals, o.Rendering.options(chart.RenderOptions{
		ReleaseName: o.Name, Namespace: o.Namespace, Revision: last.Version + 1, IsUpgrade: true, Capabilities: o.Capabilities,
		Cluster: d.lookup(o.DryRun), PostRenderer: o.PostRenderer,
	}))
	if err != nil {
		return nil, err
	}
	d.parsed = rendered.Parsed // the recorded manifest, when it is the same, is not parsed again
	// The record keeps each subchart's depends-on, so that a rollback orders them too.
	if err := sequence.Record(rendered.Chart); err != nil {
		return nil, err
	}
	now := d.now()
	if err := release.CheckLabels(o.Labels); err != nil {
		return nil, err
	}
	rel := &release.Release{
		Name: o.Name, Namespace: o.Namespace, Version: last.Version + 1,
		Labels:      release.MergeLabels(last.Labels, o.Labels),
		ApplyMethod: release.ApplyMethod,
		Chart:       rendered.Chart, Config: rendered.Config, Manifest: rendered.Manifest, Hooks: rendered.ReleaseHooks,
		Info: &release.Info{FirstDeployed: current.Info.FirstDeployed, LastDeployed: now, Status: release.StatusPendingUpgrade,
			Description: "Preparing upgrade", Notes: rendered.Notes},
	}
	if o.DryRun == ClientDryRun {
		rel.Info.Description = cmp.Or(o.Description, "Dry run complete") // as Helm's upgrade
		return rel, nil
	}
	return rel, d.replace(ctx, replacement{
		rel: rel, previous: []*release.Release{deployed, last}, crds: rendered.CRDs, objects: rendered.Resources,
		op: release.OpUpgrade, wait: o.WaitOptions, takeOwnership: o.TakeOwnership, dryRun: o.DryRun,
		noHooks: o.NoHooks, crdPolicy: o.CRDs, forceReplace: o.ForceReplace,
		success: cmp.Or(o.Description, "Upgrade complete"), failure: fmt.Sprintf("Upgrade %q failed", o.Name),
		dryRunDescription: cmp.Or(o.Description, "Dry run complete"), cleanupOnFail: o.CleanupOnFail,
		historyMax: o.HistoryMax,
		undo:       undoing(release.OpUpgrade, o.RollbackOnFailure, version(deployed), o.NoHooks).replacing(o.ForceReplace),
		preview:    o.preview,
	})
}

// replacement is an upgrade or a rollback: a new revision whose objects replace those of the
// previous revisions.
type replacement struct {
	rel *release.Release
	op  release.Operation
	// recorded says rel is recorded already: an interrupted operation being finished.
	recorded bool
	previous []*release.Release // the deployed and the last revision (either may be nil)
	crds     []*unstructured.Unstructured
	objects  []*unstructured.Unstructured

	wait             WaitOptions
	noHooks          bool
	takeOwnership    bool
	dryRun           DryRun
	success, failure string
	// dryRunDescription is the description of the revision a server dry run returns.
	dryRunDescription string
	historyMax        int
	// undo undoes the operation if it fails (rollback on failure); cleanupOnFail deletes first
	// the objects it created.
	undo          undo
	cleanupOnFail bool
	// crdPolicy says what is done with crds (the default: Helm's for op); forceReplace replaces
	// the objects whose changes the API server refuses as immutable.
	crdPolicy    CRDPolicy
	forceReplace bool
	// preview, when set with a server dry run, is filled with what the operation would do.
	preview *Preview
}

func (d *operation) replace(ctx context.Context, r replacement) error {
	rel := r.rel
	p, err := prepare(d.Cluster, rel.Name, rel.Namespace, crdsFor(r.crdPolicy, r.op, r.crds), r.objects)
	if err != nil {
		return skippedCRDs(err, r.crdPolicy, r.op, r.crds)
	}
	var recorded []*unstructured.Unstructured
	for i, prev := range r.previous {
		if slices.ContainsFunc(r.previous[:i], func(p *release.Release) bool { return p != nil && prev != nil && p.Version == prev.Version }) {
			continue // the deployed revision is the last one: its manifest is read once
		}
		objs, err := d.recordedObjects(prev)
		if err != nil {
			return err
		}
		recorded = union(recorded, objs)
	}
	s := surveyCluster(ctx, d.Cluster, p, union(p.objects, recorded),
		surveyOptions{replaceCRDs: r.crdPolicy.of(r.op) == CRDsCreateReplace, forceReplace: r.forceReplace})
	if s.liveErr != nil {
		return s.liveErr
	}
	before, crds := s.before, s.crds
	if err := checkOwnership(rel.Name, rel.Namespace, p.objects, crds, before, r.takeOwnership); err != nil {
		return err
	}
	pol := revisionPolicy{op: r.op, revision: rel.Version, create: !r.recorded, adopted: identities(adoptedFromHelm(slices.Concat(crds, p.objects), before))}
	for _, prev := range r.previous {
		if prev != nil && prev.Info.Status == release.StatusDeployed && prev.Version != rel.Version && !slices.Contains(pol.superseded, prev.Version) {
			pol.superseded = append(pol.superseded, prev.Version)
		}
	}
	order, err := d.batches(rel, r.wait)
	if err != nil {
		return err
	}
	pl, err := d.revisionPlan(plan.Input{CRDs: crds, Desired: p.objects, Recorded: recorded, Live: before, Wait: r.wait.Wait, Late: p.lateIdentities(),
		Batches: order, Replace: s.replaced}, pol, rel, r.noHooks)
	if err != nil {
		return err
	}
	if r.dryRun == NoDryRun {
		// What would block the plan's requests is named before what the dry run refused: a
		// webhook that cannot answer is the reason of both.
		objects := byID(recorded)
		maps.Copy(objects, p.byID)
		if err := d.preflight(ctx, r.op, rel, pl, objects, before, s.applied); err != nil {
			return err
		}
	}
	if err := errors.Join(s.crdErr, s.validationErr); err != nil {
		return err
	}
	if r.dryRun == ServerDryRun {
		rel.Info.Description = cmp.Or(r.dryRunDescription, "Dry run complete")
		d.runs.plan(pl)
		return r.preview.fill(ctx, d.Deps, previewInput{
			op: r.op, rel: rel, previous: r.previous, plan: pl, p: p, before: before, applied: s.applied,
			pre: hookEvents(r.op)[0], post: hookEvents(r.op)[1], noHooks: r.noHooks,
		})
	}
	run := &runner{d: d, rel: rel, objects: p.byID, success: r.success, failure: r.failure}
	if !r.recorded {
		run.historyMax = r.historyMax
	}
	u := r.undo
	if r.cleanupOnFail {
		u.cleanup = toCreate(p.objects, before)
	}
	// Time is kept for what a failure does: undo it, delete what it created.
	fwd, cancelFwd := r.wait.forward(ctx, u.op != "" || u.cleanup != nil)
	defer cancelFwd()
	if pl, err = d.begin(fwd, r.op, rel.Version, pl, journalOptions(r.wait, r.noHooks, r.takeOwnership)); err == nil {
		opts := d.engineOptions(p, before, r.wait)
		opts.Unchanged = s.unchanged(p, r.takeOwnership)
		_, err = d.execute(fwd, r.op, rel.Version, pl, run, opts)
	}
	if err != nil {
		if r.op == release.OpRollback && !failedApplying(err) {
			// As Helm's rollback: what it created is deleted only when applying fails.
			u.cleanup = nil
		}
		return d.fail(ctx, run, pl, err, u)
	}
	return nil
}

// version is rel's revision number; 0 for none.
func version(rel *release.Release) int {
	if rel == nil {
		return 0
	}
	return rel.Version
}
