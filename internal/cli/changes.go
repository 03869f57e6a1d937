package cli

import (
	"io"

	"helm.sh/helm/v4/pkg/cli/output"

	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// operationReport is what berth adds to the -o json|yaml of an install, upgrade, rollback or
// uninstall, under the key "berth" (helm's output has no key of that name).
type operationReport struct {
	// Changes say what happened to each object the operation applied, left alone or deleted, in
	// the order of its plans' steps.
	Changes []objectChange `json:"changes"`
	// Actions are what the operation did, in order, when it did more than what was asked (an
	// interrupted operation finished or undone first).
	Actions []lifecycle.Action `json:"actions,omitempty"`
}

// objectChange is what one plan an operation executed did to one object.
type objectChange struct {
	Object resource.Identity `json:"object"`
	Change engine.Change     `json:"change"`
	// Operation and Revision name the plan: the operation's own, an interrupted one it finished
	// first, or the undo of a failure.
	Operation release.Operation `json:"operation"`
	Revision  int               `json:"revision"`
}

// changes lists what the runs of an operation did to the objects, one run after another, each
// run's change set as it is (in the order of its plan's steps).
func changes(runs []lifecycle.Run) []objectChange {
	out := []objectChange{}
	for _, run := range runs {
		for _, e := range run.Changes.Entries {
			out = append(out, objectChange{Object: e.Object, Change: e.Change, Operation: run.Operation, Revision: run.Revision})
		}
	}
	return out
}

// reportOf is berth's report of an operation that executed runs; nil when it executed none (a
// dry run).
func reportOf(runs []lifecycle.Run) *operationReport {
	if len(runs) == 0 {
		return nil
	}
	return &operationReport{Changes: changes(runs)}
}

// resultReport is berth's report of an install, upgrade or rollback: reportOf its runs, with its
// actions when they were more than the one asked.
func resultReport(res *lifecycle.Result) *operationReport {
	r := reportOf(res.Runs)
	if r != nil && len(res.Actions) > 1 {
		r.Actions = res.Actions
	}
	return r
}

// releaseReport is a release as helm prints it, with berth's report of the operation that
// recorded it.
type releaseReport struct {
	*release.Release
	Berth *operationReport `json:"berth,omitempty"`
}

// uninstallReport is what an uninstall did, with berth's report of the changes.
type uninstallReport struct {
	*lifecycle.UninstallResult
	Berth *operationReport `json:"berth,omitempty"`
}

func uninstallReportOf(res *lifecycle.UninstallResult) uninstallReport {
	return uninstallReport{UninstallResult: res, Berth: reportOf(res.Runs)}
}

// resultWriter prints the release an install, upgrade or rollback recorded as helm does, and
// with -o json|yaml berth's report of the operation beside helm's keys.
type resultWriter struct {
	statusWriter
	report *operationReport
}

// value is the release with its chart, as helm install and helm upgrade print it (helm status
// leaves the chart out).
func (w resultWriter) value() releaseReport {
	return releaseReport{Release: w.rel, Berth: w.report}
}

func (w resultWriter) WriteJSON(out io.Writer) error { return output.EncodeJSON(out, w.value()) }

func (w resultWriter) WriteYAML(out io.Writer) error { return output.EncodeYAML(out, w.value()) }
