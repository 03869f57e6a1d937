// Package diff turns what an operation would do — its plan, the objects it would apply, the live
// objects and the API server's dry run of berth's apply — into what people read: the hooks that
// would run, a unified diff per object, the objects kept and deleted, and the record written.
// It does no I/O.
package diff

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// SchemaVersion names the JSON form of a Result. It changes whenever a field changes meaning or
// goes away; new fields may be added within one version.
const SchemaVersion = "berth.dev/diff/v2"

// Change is what an operation would do to an object, in the vocabulary of what the engine says
// it did (plan.Change): created, configured, unchanged, deleted or kept.
type Change = plan.Change

// Options change how a diff is computed.
type Options struct {
	// ShowSecrets shows the values of Secrets, and the values that came from an encrypted values
	// file (Secrets); otherwise each value of a Secret shows only whether it changed, and each of
	// Secrets is masked wherever it occurs.
	ShowSecrets bool
	// Secrets are the texts of the values that came from an encrypted values file, of the values
	// applied now and of those recorded by the release's revisions (valuemask.Strings). Without
	// ShowSecrets, every occurrence of one within a string of an object's diff, and every number
	// that prints as one, is masked; where that would hide that a field changes, the field says so.
	Secrets []string
	// Context is the number of unchanged lines around each change.
	Context int
}

// DefaultOptions masks Secrets and shows three lines of context.
func DefaultOptions() Options { return Options{Context: 3} }

// Result is what an operation would do, in the order it would do it.
type Result struct {
	SchemaVersion string            `json:"schemaVersion"`
	Operation     release.Operation `json:"operation"`
	Release       string            `json:"release"`
	Namespace     string            `json:"namespace"`
	Hooks         []Hook            `json:"hooks"`
	// Batches, with --wait=ordered, are the batches the chart declares (HIP-0025), in the order
	// they would be applied (or, for an uninstall, deleted), each waited for before the next.
	Batches []Batch  `json:"batches,omitempty"`
	Objects []Object `json:"objects"`
	Record  Record   `json:"record"`
	Summary Summary  `json:"summary"`
}

// Batch is one batch of an ordered operation: its wait step, why it is there, and its objects.
type Batch struct {
	Step    string              `json:"step"`
	Reason  string              `json:"reason"`
	Objects []resource.Identity `json:"objects"`
}

// Hook is a hook that would run.
type Hook struct {
	Event resource.HookEvent `json:"event"`
	resource.Identity
	Weight         int                     `json:"weight"`
	DeletePolicies []resource.DeletePolicy `json:"deletePolicies"`
}

// Object is what would happen to one object.
type Object struct {
	resource.Identity
	Change Change `json:"change"`
	// Step is the plan step that would apply or delete the object (empty for kept objects).
	Step string `json:"step,omitempty"`
	// AdoptedFromHelm: the object exists with fields Helm's client-side apply (or berth's former
	// field manager) set, which move to the field manager berth shares with Helm v4 first.
	AdoptedFromHelm bool `json:"adoptedFromHelm,omitempty"`
	// NotDryRun: the object's kind is defined by a CRD of the release and not served yet, so the
	// API server could not dry-run it; the diff shows the rendered object.
	NotDryRun bool `json:"notDryRun,omitempty"`
	// Replaced: the API server refuses to change immutable fields of the object, so it would be
	// deleted and created again (--force-replace); the diff shows the dry run of its creation.
	Replaced bool `json:"replaced,omitempty"`
	// Diff is a unified diff of the object's YAML, live first; empty when unchanged.
	Diff string `json:"diff,omitempty"`
}

// Record is the release record the operation would write.
type Record struct {
	// Revision is the revision written (install, upgrade, rollback) or removed (uninstall).
	Revision int `json:"revision"`
	// Status is the status the revision is recorded with once the operation succeeds; for an
	// uninstall that removes every record, "removed".
	Status string `json:"status"`
	// Superseded are the revisions marked superseded.
	Superseded []int `json:"superseded,omitempty"`
	// Watch, when the operation has a watch window (--watch-for), is how long its objects must
	// stay ready before the revision is recorded with Status.
	Watch *plan.Window `json:"watch,omitempty"`
}

// Summary counts the objects by change.
type Summary struct {
	Created    int `json:"created"`
	Configured int `json:"configured"`
	Deleted    int `json:"deleted"`
	Unchanged  int `json:"unchanged"`
	Kept       int `json:"kept"`
	Adopted    int `json:"adoptedFromHelm"`
}

// HasChanges reports whether the operation would create, change or delete an object.
func (r *Result) HasChanges() bool {
	return r.Summary.Created+r.Summary.Configured+r.Summary.Deleted > 0
}

// Compute turns a preview into a Result.
func Compute(pv *lifecycle.Preview, o Options) (*Result, error) {
	r := &Result{SchemaVersion: SchemaVersion, Operation: pv.Operation, Hooks: []Hook{}, Objects: []Object{}}
	if pv.Release != nil {
		r.Release, r.Namespace = pv.Release.Name, pv.Release.Namespace
		r.Record = record(pv)
	}
	for _, h := range pv.Hooks {
		r.Hooks = append(r.Hooks, Hook{Event: h.Event, Identity: h.Identity, Weight: h.Weight, DeletePolicies: h.DeletePolicies})
	}
	replaced := pv.Plan.Replaced()
	for _, step := range pv.Plan.Steps {
		if (step.Action == plan.WaitReady || step.Action == plan.WaitAbsent) && strings.Contains(step.ID, "/batch-") &&
			strings.Count(step.ID, "/") == 1 {
			r.Batches = append(r.Batches, Batch{Step: step.ID, Reason: step.Reason, Objects: step.Objects})
		}
		if step.Action != plan.Apply && step.Action != plan.Delete {
			continue
		}
		for _, id := range step.Objects {
			if step.Action == plan.Delete && replaced[id] {
				continue // shown once, by the step that creates it again
			}
			obj, err := object(pv, step, id, o)
			if err != nil {
				return nil, err
			}
			obj.Replaced = replaced[id]
			r.Objects = append(r.Objects, obj)
		}
	}
	for _, id := range pv.Plan.Kept {
		r.Objects = append(r.Objects, Object{Identity: id, Change: plan.Kept})
	}
	for _, obj := range r.Objects {
		switch obj.Change {
		case plan.Created:
			r.Summary.Created++
		case plan.Configured:
			r.Summary.Configured++
		case plan.Deleted:
			r.Summary.Deleted++
		case plan.Unchanged:
			r.Summary.Unchanged++
		case plan.Kept:
			r.Summary.Kept++
		}
		if obj.AdoptedFromHelm {
			r.Summary.Adopted++
		}
	}
	return r, nil
}

func record(pv *lifecycle.Preview) Record {
	rel := pv.Release
	switch {
	case pv.Operation != release.OpUninstall:
		rec := Record{Revision: rel.Version, Status: string(release.StatusDeployed), Superseded: pv.Superseded}
		for _, step := range pv.Plan.Steps {
			if step.Action == plan.Watch {
				rec.Watch = step.Window
			}
		}
		return rec
	case pv.KeepHistory:
		return Record{Revision: rel.Version, Status: string(release.StatusUninstalled)}
	default:
		return Record{Revision: rel.Version, Status: "removed"}
	}
}

// object compares the live object with what the step would make of it, from the preview's
// record of the object.
func object(pv *lifecycle.Preview, step plan.Step, id resource.Identity, o Options) (Object, error) {
	f := pv.Object(id)
	out := Object{Identity: id, Step: step.ID, AdoptedFromHelm: f.Adopted}
	live := f.Live
	var after *unstructured.Unstructured
	afterLabel := fmt.Sprintf("%s (%s, server-side dry run)", id, pv.Operation)
	if step.Action == plan.Delete {
		out.Change = plan.Deleted
		afterLabel = fmt.Sprintf("%s (deleted)", id)
	} else {
		after = f.Applied
		if after == nil {
			after, out.NotDryRun = f.Desired, true
			afterLabel = fmt.Sprintf("%s (%s, as rendered: its kind is not served yet, so it was not dry-run)", id, pv.Operation)
		}
		out.Change = plan.Configured
		if live == nil {
			out.Change = plan.Created
		}
	}
	beforeLabel := fmt.Sprintf("%s (live)", id)
	if live == nil {
		beforeLabel = fmt.Sprintf("%s (absent)", id)
	}
	d, err := Versions(id, live, after, beforeLabel, afterLabel, o)
	if err != nil {
		return out, err
	}
	if d == "" && out.Change == plan.Configured {
		out.Change = plan.Unchanged
	}
	out.Diff = d
	return out, nil
}

// Versions is the unified diff of two versions of the object id (either may be nil: absent),
// each cleaned (Clean) and masked as o says: a Secret's values show only whether each changed,
// and the texts of o.Secrets are masked, unless o.ShowSecrets. Empty when they read the same.
func Versions(id resource.Identity, before, after *unstructured.Unstructured, beforeLabel, afterLabel string, o Options) (string, error) {
	a, b := clean(before), clean(after)
	if id.Group == "" && id.Kind == "Secret" && !o.ShowSecrets {
		maskSecret(a, b)
	}
	if !o.ShowSecrets {
		maskStrings(a, b, o.Secrets)
	}
	return textDiff(id, a, b, beforeLabel, afterLabel, o.Context)
}

// textDiff is the unified diff of the YAML of a and b; empty when they read the same.
func textDiff(id resource.Identity, a, b map[string]any, beforeLabel, afterLabel string, context int) (string, error) {
	ay, err := toYAML(a)
	if err != nil {
		return "", fmt.Errorf("%s: %w", id, err)
	}
	by, err := toYAML(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w", id, err)
	}
	return Unified(ay, by, beforeLabel, afterLabel, context)
}

// Clean returns a copy of the object without what the API server keeps for itself and nobody
// applies (status, managed fields, resourceVersion, generation, UID, creation time): what two
// versions of an object are compared on. Nil for nil.
func Clean(obj *unstructured.Unstructured) map[string]any { return clean(obj) }

func clean(obj *unstructured.Unstructured) map[string]any {
	if obj == nil {
		return nil
	}
	c := obj.DeepCopy().Object
	delete(c, "status")
	if md, ok := c["metadata"].(map[string]any); ok {
		for _, f := range []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink"} {
			delete(md, f)
		}
	}
	return c
}

// lines splits text into lines that keep their newlines.
func lines(s string) []string {
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

func toYAML(obj map[string]any) (string, error) {
	if obj == nil {
		return "", nil
	}
	b, err := yaml.Marshal(obj)
	return string(b), err
}

// lastApplied is kubectl's annotation, which holds a Secret's values in the clear.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// maskSecret replaces the values of two versions of a Secret (either may be nil) with marks that
// say only whether each changed.
func maskSecret(before, after map[string]any) {
	for _, path := range [][]string{{"data"}, {"stringData"}} {
		maskValues(field(before, path...), field(after, path...), nil)
	}
	maskValues(field(before, "metadata", "annotations"), field(after, "metadata", "annotations"), []string{lastApplied})
}

func field(obj map[string]any, path ...string) map[string]any {
	for _, p := range path {
		next, _ := obj[p].(map[string]any)
		if next == nil {
			return nil
		}
		obj = next
	}
	return obj
}

// maskValues masks the values of a and b (the keys in only, when only is not nil).
func maskValues(a, b map[string]any, only []string) {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for k := range keys {
		if only != nil && !slices.Contains(only, k) {
			continue
		}
		av, inA := a[k]
		bv, inB := b[k]
		switch {
		case inA && inB && fmt.Sprint(av) == fmt.Sprint(bv):
			a[k], b[k] = "(masked, unchanged)", "(masked, unchanged)"
		case inA && inB:
			a[k], b[k] = "(masked, before)", "(masked, changed)"
		case inA:
			a[k] = "(masked)"
		case inB:
			b[k] = "(masked)"
		}
	}
}

// Text renders the result for people; with color, for a terminal.
func (r *Result) Text(color bool) string {
	var b strings.Builder
	p := painter{on: color}
	if len(r.Hooks) > 0 {
		b.WriteString(p.bold("Hooks that would run, in order:") + "\n")
		for _, h := range r.Hooks {
			policies := make([]string, len(h.DeletePolicies))
			for i, d := range h.DeletePolicies {
				policies[i] = string(d)
			}
			fmt.Fprintf(&b, "  %-13s %s (weight %d, delete policy %s)\n", h.Event, h.Identity, h.Weight, strings.Join(policies, ","))
		}
	}
	if len(r.Batches) > 0 {
		b.WriteString(p.bold("Batches, in order (--wait=ordered), each waited for before the next:") + "\n")
		for _, bt := range r.Batches {
			fmt.Fprintf(&b, "  %s\n", bt.Reason)
			for _, id := range bt.Objects {
				fmt.Fprintf(&b, "    %s\n", id)
			}
		}
	}
	sections := []struct {
		title string
		pick  func(Object) bool
		diff  bool
	}{
		{"Created:", func(o Object) bool { return o.Change == plan.Created }, true},
		{"Configured:", func(o Object) bool { return o.Change == plan.Configured }, true},
		{"Adopted (fields applied client-side or by berth's former field manager move to the shared one):", func(o Object) bool { return o.AdoptedFromHelm }, false},
		{"Kept (helm.sh/resource-policy: keep):", func(o Object) bool { return o.Change == plan.Kept }, false},
		{"Deleted:", func(o Object) bool { return o.Change == plan.Deleted }, true},
	}
	for _, s := range sections {
		var objs []Object
		for _, o := range r.Objects {
			if s.pick(o) {
				objs = append(objs, o)
			}
		}
		if len(objs) == 0 {
			continue
		}
		b.WriteString(p.bold(s.title) + "\n")
		for _, o := range objs {
			if o.Replaced && s.diff {
				fmt.Fprintf(&b, "  %s (replaced: deleted, then created again, as its immutable fields change)\n", o.Identity)
			}
			if !s.diff || o.Diff == "" {
				fmt.Fprintf(&b, "  %s (%s)\n", o.Identity, o.Change)
				continue
			}
			b.WriteString(p.diff(o.Diff))
		}
	}
	if r.Record.Revision > 0 {
		b.WriteString(p.bold("Record:") + " " + r.recordLine() + "\n")
	}
	s := r.Summary
	fmt.Fprintf(&b, "%d created, %d configured, %d deleted, %d unchanged", s.Created, s.Configured, s.Deleted, s.Unchanged)
	if s.Kept > 0 {
		fmt.Fprintf(&b, ", %d kept", s.Kept)
	}
	if s.Adopted > 0 {
		fmt.Fprintf(&b, ", %d adopted", s.Adopted)
	}
	b.WriteString("\n")
	return b.String()
}

func (r *Result) recordLine() string {
	rec := r.Record
	switch rec.Status {
	case "removed":
		return fmt.Sprintf("every record of release %s removed (last revision %d)", r.Release, rec.Revision)
	case string(release.StatusUninstalled):
		return fmt.Sprintf("release %s revision %d marked uninstalled, its history kept", r.Release, rec.Revision)
	}
	line := fmt.Sprintf("release %s revision %d, %s", r.Release, rec.Revision, rec.Status)
	if rec.Watch != nil {
		line += fmt.Sprintf(" once its objects stayed ready for %s (--watch-for; pending meanwhile)", rec.Watch.For)
	}
	for _, v := range rec.Superseded {
		line += fmt.Sprintf("; revision %d superseded", v)
	}
	return line
}

// painter colours text for a terminal, or leaves it alone.
type painter struct{ on bool }

func (p painter) paint(code, s string) string {
	if !p.on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p painter) bold(s string) string { return p.paint("1", s) }

// diff colours the lines of a unified diff.
func (p painter) diff(d string) string {
	if !p.on {
		return d
	}
	lines := strings.SplitAfter(d, "\n")
	for i, l := range lines {
		body := strings.TrimSuffix(l, "\n")
		nl := l[len(body):]
		switch {
		case strings.HasPrefix(l, "---"), strings.HasPrefix(l, "+++"):
			lines[i] = p.bold(body) + nl
		case strings.HasPrefix(l, "@@"):
			lines[i] = p.paint("36", body) + nl
		case strings.HasPrefix(l, "+"):
			lines[i] = p.paint("32", body) + nl
		case strings.HasPrefix(l, "-"):
			lines[i] = p.paint("31", body) + nl
		}
	}
	return strings.Join(lines, "")
}

// Unified is the unified diff of two texts, labelled from and to, with context lines around each
// change; empty when they are the same.
func Unified(a, b, from, to string, context int) (string, error) {
	if a == b {
		return "", nil
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: lines(a), B: lines(b), FromFile: from, ToFile: to, Context: context})
}
