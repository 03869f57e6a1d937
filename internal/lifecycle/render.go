package lifecycle

import (
	"context"
	"errors"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"k8s.io/client-go/rest"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/sequence"
)

// Rendering are the choices of how an install or upgrade renders its chart, as Helm's flags of
// the same names make them.
type Rendering struct {
	// SkipSchemaValidation does not validate the values against values.schema.json.
	SkipSchemaValidation bool
	// SubchartNotes records (and prints) the subcharts' NOTES.txt after the chart's own.
	SubchartNotes bool
	// EnableDNS lets the templates' getHostByName resolve names; without it, it returns "".
	EnableDNS bool
	// HideSecret leaves the Secrets out of the manifest a dry run returns; only with a dry run.
	HideSecret bool
	// Sandbox renders the templates in a child process under chart.DefaultRenderLimits, as a
	// controller does, unless Deps.Templates says how.
	Sandbox bool
}

// ErrHideSecretNeedsDryRun says Secrets can be hidden only from a dry run's manifest: a
// release's record keeps them.
var ErrHideSecretNeedsDryRun = errors.New("hiding Kubernetes secrets requires a dry-run mode")

// check refuses what cannot be done in mode dryRun.
func (r Rendering) check(dryRun DryRun) error {
	if r.HideSecret && dryRun == NoDryRun {
		return ErrHideSecretNeedsDryRun
	}
	return nil
}

// options adds r to o.
func (r Rendering) options(o chart.RenderOptions) chart.RenderOptions {
	o.SkipSchemaValidation = r.SkipSchemaValidation
	o.SubchartNotes = r.SubchartNotes
	o.EnableDNS = r.EnableDNS
	o.HideSecret = r.HideSecret
	return o
}

// render renders chart ch with vals for a new revision.
func (o *operation) render(ctx context.Context, ch *chartv2.Chart, vals map[string]any, r Rendering, opts chart.RenderOptions) (contents, error) {
	opts.Templates = o.Templates
	if opts.Templates == nil && r.Sandbox {
		s, err := chart.NewSandbox(chart.DefaultRenderLimits(), 1)
		if err != nil {
			return contents{}, err
		}
		opts.Templates = s
	}
	rendered, err := chart.Render(ctx, ch, vals, r.options(opts))
	if err != nil {
		return contents{}, err
	}
	// Ordering reads the manifest again; the recorded manifest, when it is the same, is not
	// parsed again.
	o.parsed = rendered.Parsed
	// The record keeps each subchart's depends-on, so that a rollback orders them too.
	if err := sequence.Record(rendered.Chart); err != nil {
		return contents{}, err
	}
	return contents{rendered: true, chart: rendered.Chart, config: rendered.Config, manifest: rendered.Manifest, hooks: rendered.ReleaseHooks,
		notes: rendered.Notes, crds: rendered.CRDs, objects: rendered.Resources}, nil
}

// lookup is the cluster rendering reads with lookup in mode dryRun: none for a client dry run,
// which talks to no cluster.
func (d Deps) lookup(dryRun DryRun) *rest.Config {
	if dryRun == ClientDryRun {
		return nil
	}
	return d.Lookup
}
