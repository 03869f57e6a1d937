package chart

import (
	"fmt"
	"path"
)

// AliasError is a YAML file of a chart, one that Helm's loader parses (values.yaml, Chart.yaml,
// Chart.lock, requirements.*), whose aliases would expand it past a limit, or which does not
// parse so that they cannot be counted. Err is a *yamlbound.ExpansionError, CycleError or
// SyntaxError; none quotes the file.
type AliasError struct {
	// Chart says where the chart comes from.
	Chart string
	// File is the file's path in the chart, through the packaged subcharts that hold it
	// ("web/charts/db-1.0.0.tgz: db/values.yaml").
	File string
	Err  error
}

func (e *AliasError) Error() string {
	return fmt.Sprintf("load chart %s: %s: %v", e.Chart, e.File, e.Err)
}

func (e *AliasError) Unwrap() error { return e.Err }

// loaderParses says whether Helm's loader parses a file of this name as YAML when it is at the
// root of a chart. Files of these names elsewhere are checked too: it costs nothing when they
// hold no alias.
func loaderParses(name string) bool {
	switch path.Base(name) {
	case "Chart.yaml", "Chart.lock", "values.yaml", "requirements.yaml", "requirements.lock":
		return true
	}
	return false
}
