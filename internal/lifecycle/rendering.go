package lifecycle

import (
	"errors"

	"github.com/berthdev/berth/internal/chart"
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
