package lifecycle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/postrenderer"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/release"
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
	// Provenance is the proof that Chart was verified, recorded with the revision; nil records
	// it as not verified.
	Provenance *release.Provenance
	// EncryptedValues are the paths (lists of keys) of the values in Values that came from an
	// encrypted values file, recorded with the revision; when the upgrade reuses the previous
	// revision's values, the paths recorded with them are kept as well.
	EncryptedValues [][]string
	// AllowUnverified lets the rollback that undoes a failed upgrade (RollbackOnFailure, the
	// watch window) go back to a revision whose chart was not verified when the upgrade's was.
	AllowUnverified bool
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
	o.Wait = o.Wait || o.RollbackOnFailure || o.Watch.For > 0 // as Install
	if err := o.Rendering.check(o.DryRun); err != nil {
		return nil, err
	}
	failure, regression := o.Watch.undoes(o.RollbackOnFailure)
	if err := o.checkWindow(failure || regression || o.CleanupOnFail); err != nil {
		return nil, err
	}
	if io := o.install(); o.Install {
		// The install that Install makes has a window of its own (InstallWith).
		if err := io.checkWindow(io.undone()); err != nil {
			return nil, err
		}
	}
	w := Wanted{Operation: release.OpUpgrade, Install: o.Install, Values: o.Values, Grants: grantsOf(o.TakeOwnership, o.NoHooks, release.OpUpgrade)}
	if io := o.install(); o.Install && io.NoHooks {
		w.Grants.NoHooks = append(w.Grants.NoHooks, release.OpInstall)
	}
	if o.Chart != nil && o.Chart.Metadata != nil {
		w.ChartVersion = o.Chart.Metadata.Version
	}
	res, err := d.revisionOperation(ctx, w, o.Name, o.WaitOptions, o.DryRun, func(ctx context.Context, op *operation, a Action) (*release.Release, error) {
		if a == ActInstall {
			return op.install(ctx, o.install())
		}
		return op.upgrade(ctx, o)
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
		Labels: o.Labels, Provenance: o.Provenance, EncryptedValues: o.EncryptedValues, PostRenderer: o.PostRenderer, CRDs: o.CRDs, Rendering: o.Rendering, ForceReplace: o.ForceReplace,
		// As Helm's upgrade --install, the install takes the name of an uninstalled release.
		Replace: true,
		preview: o.preview,
	}
	if s := o.InstallWith; s != nil {
		io.WaitOptions, io.NoHooks, io.RollbackOnFailure, io.CRDs = s.WaitOptions, s.NoHooks, s.RollbackOnFailure, s.CRDs
		io.Wait = io.Wait || io.RollbackOnFailure || io.Watch.For > 0
	}
	return io
}

// upgrade is Upgrade within its operation (or its dry run): the revision pipeline, replacing the
// deployed and the last revision, rolled back to the deployed one on failure when asked.
func (o *operation) upgrade(ctx context.Context, opts UpgradeOptions) (*release.Release, error) {
	return o.carryOut(ctx, upgradeOp{opts})
}

// upgradeOp is an upgrade as the revision pipeline carries it out.
type upgradeOp struct{ o UpgradeOptions }

// read reads the last and the deployed revision: the new one is rendered from the chart and
// the values merged over the current one's (the deployed, or else the last), and is the next.
func (op upgradeOp) read(ctx context.Context, d *operation) (draft, policy, error) {
	o := op.o
	last, err := d.Store.Last(ctx, o.Name)
	if errors.Is(err, release.ErrNotFound) || (err == nil && last.Info.Status == release.StatusUninstalled) {
		return draft{}, policy{}, &NotInstalledError{Release: o.Name, Namespace: o.Namespace} // Next decides to install
	}
	if err != nil {
		return draft{}, policy{}, err
	}
	deployed, err := deployedOf(ctx, d.Store, last)
	if err != nil && !errors.Is(err, release.ErrNotFound) && !errors.Is(err, release.ErrNoDeployed) {
		return draft{}, policy{}, err
	}
	current := last
	if deployed != nil {
		current = deployed
	}
	ch, vals, err := chart.UpgradeValues(o.Chart, chart.Previous{Chart: current.Chart, Config: current.Config}, o.Values, o.ValuesStrategy)
	if err != nil {
		return draft{}, policy{}, err
	}
	number := last.Version + 1
	dr := draft{name: o.Name, namespace: o.Namespace, number: number, previous: []*release.Release{deployed, last},
		entry: entry{labels: release.MergeLabels(last.Labels, o.Labels), firstDeployed: current.Info.FirstDeployed, proof: o.Provenance,
			encrypted: encryptedValues(o, current)},
		render: &renderInput{chart: ch, values: vals, rendering: o.Rendering, options: chart.RenderOptions{
			ReleaseName: o.Name, Namespace: o.Namespace, Revision: number, IsUpgrade: true, Capabilities: o.Capabilities,
			Cluster: d.lookup(o.DryRun), PostRenderer: o.PostRenderer,
		}},
	}
	if err := release.CheckLabels(o.Labels); err != nil {
		return draft{}, policy{}, err
	}
	pol := policy{op: release.OpUpgrade,
		settings: settings{wait: o.WaitOptions, dryRun: o.DryRun, noHooks: o.NoHooks, takeOwnership: o.TakeOwnership,
			crds: o.CRDs, forceReplace: o.ForceReplace, historyMax: o.HistoryMax, preview: o.preview},
		said: descriptions{success: cmp.Or(o.Description, "Upgrade complete"), failure: fmt.Sprintf("Upgrade %q failed", o.Name),
			dryRun: o.Description, clientDryRun: cmp.Or(o.Description, "Dry run complete")}, // as Helm's upgrade
		undo: undo{cleanupOnFail: o.CleanupOnFail},
	}
	pol.undo.onFailure, pol.undo.onRegression = o.Watch.undoes(o.RollbackOnFailure)
	pol.undo.run = func(ctx context.Context, cause error) error {
		if deployed == nil {
			return errors.New("no deployed revision to roll back to")
		}
		// The rollback replaces objects whose immutable fields change, as the upgrade did.
		_, err := d.rollback(ctx, RollbackOptions{Name: o.Name, Namespace: o.Namespace, Version: deployed.Version,
			NoHooks: o.NoHooks, WaitOptions: WaitOptions{Wait: true}, ForceReplace: o.ForceReplace, AllowUnverified: o.AllowUnverified,
			Description: undoDescription(deployed.Version, number, cause)})
		return err
	}
	return dr, pol, nil
}

// encryptedValues are the paths of the values from an encrypted values file that an upgrade
// records: those of its own values, and those recorded with the current revision's when the
// upgrade reuses them.
func encryptedValues(o UpgradeOptions, current *release.Release) [][]string {
	if !chart.ReusesPrevious(o.Values, current.Config, o.ValuesStrategy) {
		return o.EncryptedValues
	}
	return release.SortedPaths(append(slices.Clone(o.EncryptedValues), release.EncryptedValuesOf(current)...))
}
