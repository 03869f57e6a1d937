// Package doctor finds what in a cluster would make a release operation hang or fail before
// the operation walks into it: admission webhooks that cannot answer, APIServices that are not
// available, namespaces stuck Terminating, objects stuck on finalizers, releases left pending,
// release records near the most an object may hold (or split into parts, or incomplete), parts
// of records that no record names, PodDisruptionBudgets that allow no eviction, and berth.dev
// Releases that no running controller serves. It only reads.
package doctor

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// Severity says how bad a finding is.
type Severity string

const (
	// Warning: an operation may be slowed or blocked in some cases.
	Warning Severity = "warning"
	// Blocker: an operation that meets it will hang or fail.
	Blocker Severity = "blocker"
)

// Finding is one thing in the cluster that will get in an operation's way.
type Finding struct {
	Severity Severity `json:"severity"`
	// Check names the check that found it: webhook, apiservice, conversion, namespace,
	// finalizer, hook, release, record-size, incomplete-record, orphan-parts, shard, pdb, or
	// permission and read for what could not be read.
	Check  string            `json:"check"`
	Object resource.Identity `json:"object"`
	// Problem is what is wrong.
	Problem string `json:"problem"`
	// Breaks is what it breaks.
	Breaks string `json:"breaks"`
	// Fix is what to do about it.
	Fix string `json:"fix"`
	// Finalizer is, for a finalizer finding, the finalizer, who removes it, and for a built-in one
	// why its holder waits on the oldest object.
	Finalizer *cluster.FinalizerReport `json:"finalizer,omitempty"`
	// Footprint is, for a record-size finding, what each revision's record of the release takes:
	// sizes and names, never what the records hold.
	Footprint *release.Footprint `json:"footprint,omitempty"`
}

// Report is what a run of the checks found.
type Report struct {
	// Scope is what was checked: "cluster", or "namespace NS", or "release NAME in namespace NS".
	Scope    string    `json:"scope"`
	Findings []Finding `json:"findings"`
}

// Worst is the worst severity found, "" when nothing was found.
func (r Report) Worst() Severity {
	worst := Severity("")
	for _, f := range r.Findings {
		if f.Severity == Blocker {
			return Blocker
		}
		worst = Warning
	}
	return worst
}

// Count returns the numbers of blockers and warnings.
func (r Report) Count() (blockers, warnings int) {
	for _, f := range r.Findings {
		if f.Severity == Blocker {
			blockers++
		} else {
			warnings++
		}
	}
	return blockers, warnings
}

// sort orders the findings: blockers first, then by check and object.
func (r *Report) sort() {
	slices.SortStableFunc(r.Findings, func(a, b Finding) int {
		if a.Severity != b.Severity {
			if a.Severity == Blocker {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.Check, b.Check); c != 0 {
			return c
		}
		if c := resource.Compare(a.Object, b.Object); c != 0 {
			return c
		}
		return strings.Compare(a.Problem, b.Problem)
	})
}

// WriteText writes the report for people: each finding with what it breaks and its fix, then a
// summary line.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "%-8s %s (%s)\n", strings.ToUpper(string(f.Severity)), f.Object, f.Check)
		fmt.Fprintf(&b, "  problem: %s\n", f.Problem)
		if f.Breaks != "" {
			fmt.Fprintf(&b, "  breaks:  %s\n", f.Breaks)
		}
		if f.Fix != "" {
			fmt.Fprintf(&b, "  fix:     %s\n", f.Fix)
		}
		b.WriteString("\n")
	}
	blockers, warnings := r.Count()
	if blockers+warnings == 0 {
		fmt.Fprintf(&b, "%s: nothing found that would block a release operation\n", r.Scope)
	} else {
		fmt.Fprintf(&b, "%s: %s, %s\n", r.Scope, plural(blockers, "blocker"), plural(warnings, "warning"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
