package lifecycle

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/postrenderer"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
)

// InstallOptions describe an install.
type InstallOptions struct {
	Name      string
	Namespace string
	Chart     *chartv2.Chart
	// Values are the user-supplied values (-f, --set, ...).
	Values map[string]any
	WaitOptions
	CreateNamespace   bool
	TakeOwnership     bool
	RollbackOnFailure bool
	// NoHooks skips the chart's hooks.
	NoHooks bool
	// DryRun renders and validates (server) or only renders (client), and changes nothing.
	DryRun DryRun
	// Description replaces the recorded description on success.
	Description string
	// Capabilities of the cluster, for rendering.
	Capabilities *common.Capabilities
	// Labels are recorded on the release, as Helm's --labels.
	Labels map[string]string
	// Provenance is the proof that Chart was verified, recorded with the revision; nil records
	// it as not verified.
	Provenance *release.Provenance
	// EncryptedValues are the paths (lists of keys) of the values in Values that came from an
	// encrypted values file, recorded with the revision so that what shows its values masks them.
	EncryptedValues [][]string
	// PostRenderer rewrites the rendered templates, as Helm's --post-renderer.
	PostRenderer postrenderer.PostRenderer
	// CRDs says what is done with the CRDs of the chart's crds/ directories; by default, the
	// missing ones are created.
	CRDs CRDPolicy
	// Replace lets the install take the name of a release whose last revision is uninstalled
	// (its history kept) or failed, as Helm's --replace: the new revision follows the last, which
	// is marked superseded when it was uninstalled and left as it is when it failed.
	Replace bool
	// Rendering says how the chart is rendered.
	Rendering Rendering
	// ForceReplace deletes and creates again the existing objects (taken over, or left by the
	// release whose name it replaces) whose changes the API server refuses as immutable (see
	// UpgradeOptions).
	ForceReplace bool

	// preview, when set with a server dry run, is filled with what the install would do.
	preview *Preview
}

// Install installs a chart as a new release, or as the next revision of a release whose history
// was kept when it was uninstalled.
func Install(ctx context.Context, d Deps, o InstallOptions) (*Result, error) {
	// As in Helm, rolling back on failure implies waiting: a failure found only by waiting must
	// be seen to be rolled back. A watch window starts once the release is ready.
	o.Wait = o.Wait || o.RollbackOnFailure || o.Watch.For > 0
	if err := o.Rendering.check(o.DryRun); err != nil {
		return nil, err
	}
	if err := o.checkWindow(o.undone()); err != nil {
		return nil, err
	}
	w := Wanted{Operation: release.OpInstall, Values: o.Values, Grants: grantsOf(o.TakeOwnership, o.NoHooks, release.OpInstall)}
	if o.Chart != nil && o.Chart.Metadata != nil {
		w.ChartVersion = o.Chart.Metadata.Version
	}
	return d.revisionOperation(ctx, w, o.Name, o.WaitOptions, o.DryRun, func(ctx context.Context, op *operation, _ Action) (*release.Release, error) {
		return op.install(ctx, o)
	})
}

// undone says whether a failure of the install may be undone (see WaitOptions.checkWindow).
func (o InstallOptions) undone() bool {
	failure, regression := o.Watch.undoes(o.RollbackOnFailure)
	return failure || regression
}

// install is Install within its operation (or its dry run): the revision pipeline, replacing
// nothing, with the release namespace checked (or created) first.
func (o *operation) install(ctx context.Context, opts InstallOptions) (*release.Release, error) {
	return o.carryOut(ctx, installOp{opts})
}

// installOp is an install as the revision pipeline carries it out.
type installOp struct{ o InstallOptions }

// read takes the release's name: a new release, or, with Replace, the next revision of one
// uninstalled with its history kept or failed.
func (op installOp) read(ctx context.Context, d *operation) (draft, policy, error) {
	o := op.o
	dr := draft{name: o.Name, namespace: o.Namespace, number: 1, entry: entry{labels: o.Labels, proof: o.Provenance, encrypted: o.EncryptedValues},
		ensureNamespace: true, createNamespace: o.CreateNamespace,
		// As in Helm, an install renders .Release.Revision 1, whatever revision it records.
		render: &renderInput{chart: o.Chart, values: o.Values, rendering: o.Rendering, options: chart.RenderOptions{
			ReleaseName: o.Name, Namespace: o.Namespace, Revision: 1, Capabilities: o.Capabilities,
			Cluster: d.lookup(o.DryRun), PostRenderer: o.PostRenderer,
		}},
	}
	if o.DryRun != ClientDryRun {
		// Whether the namespace exists is asked now, and answered while the release's records
		// are read and its chart rendered.
		dr.namespaceExists = d.askNamespace(ctx, o.Namespace)
		last, err := d.Store.Last(ctx, o.Name)
		switch {
		case errors.Is(err, release.ErrNotFound):
		case err != nil:
			return dr, policy{}, err
		case !o.Replace || !replaceable(last.Info.Status):
			return dr, policy{}, &NameInUseError{Release: o.Name, Namespace: o.Namespace, Revision: last.Version, Status: last.Info.Status}
		default:
			dr.number = last.Version + 1
			if last.Info.Status == release.StatusUninstalled {
				dr.replaced = last.Version
			}
		}
	}
	if err := release.CheckLabels(o.Labels); err != nil {
		return dr, policy{}, err
	}
	pol := policy{op: release.OpInstall,
		settings: settings{wait: o.WaitOptions, dryRun: o.DryRun, noHooks: o.NoHooks, takeOwnership: o.TakeOwnership,
			crds: o.CRDs, forceReplace: o.ForceReplace, preview: o.preview},
		said: descriptions{success: cmp.Or(o.Description, "Install complete"), failure: fmt.Sprintf("Release %q failed", o.Name),
			clientDryRun: "Dry run complete"},
	}
	// Rolling back on failure (or a regression's remediation) uninstalls what was installed.
	pol.undo.onFailure, pol.undo.onRegression = o.Watch.undoes(o.RollbackOnFailure)
	pol.undo.run = func(ctx context.Context, _ error) error {
		_, err := d.uninstall(ctx, UninstallOptions{Name: o.Name, NoHooks: o.NoHooks, WaitOptions: WaitOptions{Wait: true}})
		return err
	}
	return dr, pol, nil
}

// NameInUseError says an install found the release's name taken by a release that is not
// uninstalled.
type NameInUseError struct {
	Release, Namespace string
	Revision           int
	Status             release.Status
}

func (e *NameInUseError) Error() string {
	if replaceable(e.Status) {
		return fmt.Sprintf("cannot reuse the name %q: release %s revision %d is %s in namespace %q; install with replace to take its name, or upgrade it",
			e.Release, e.Release, e.Revision, e.Status, e.Namespace)
	}
	return fmt.Sprintf("cannot reuse the name %q: release %s revision %d is %s in namespace %q; upgrade it, or uninstall it first",
		e.Release, e.Release, e.Revision, e.Status, e.Namespace)
}

// replaceable says whether an install with Replace may take the name of a release whose last
// revision has status s: uninstalled with its history kept, or failed (Helm's availableName).
func replaceable(s release.Status) bool {
	return s == release.StatusUninstalled || s == release.StatusFailed
}

// NamespaceNotFoundError says the release namespace does not exist and was not to be created.
type NamespaceNotFoundError struct {
	Namespace string
}

func (e *NamespaceNotFoundError) Error() string {
	return fmt.Sprintf("namespace %q not found", e.Namespace)
}

// askNamespace asks whether namespace name exists, and returns what answers it.
func (o *operation) askNamespace(ctx context.Context, name string) func() (bool, error) {
	var ok bool
	var err error
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		ok, err = o.Namespaces.Exists(ctx, name)
	}()
	return func() (bool, error) {
		<-answered
		return ok, err
	}
}

// ensureNamespace checks that the release namespace exists (as exists answers, when it was asked
// before; nil asks now), creating it when create is set, as a
// plan of its own run before the install's (whose dry run needs the namespace). It reports
// whether it created it.
func (o *operation) ensureNamespace(ctx context.Context, name string, create bool, exists func() (bool, error)) (bool, error) {
	if exists == nil {
		exists = o.askNamespace(ctx, name)
	}
	ok, err := exists()
	if err != nil || ok {
		return false, err
	}
	if !create {
		return false, &NamespaceNotFoundError{Namespace: name}
	}
	return true, o.executeOnce(ctx, release.OpInstall, 0, namespacePlan(plan.CreateNamespace, name), &runner{d: o})
}
