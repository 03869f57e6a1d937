// Package plan turns what a release should be (desired objects), what it was (the recorded
// objects of its previous revision) and what the cluster holds into an ordered list of steps.
// It does no I/O: a plan is plain data that can be printed, saved as JSON and executed later.
package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/sequence"
)

// Action is what a step does.
type Action string

const (
	// Apply server-side applies the step's objects, concurrently.
	Apply Action = "apply"
	// WaitReady waits until the step's objects are ready.
	WaitReady Action = "wait-ready"
	// Delete deletes the step's objects, concurrently, each by the UID it had when observed
	// (Step.UIDs).
	Delete Action = "delete"
	// WaitAbsent waits until the step's objects, by UID (Step.UIDs), are gone.
	WaitAbsent Action = "wait-absent"

	// The lifecycle's own actions: the engine orders and journals them like the others and hands
	// them to the lifecycle to run.

	// Record writes the release's record: Status says what it records.
	Record Action = "record"
	// RunHooks runs the hooks of Hook, Objects in order, each to its outcome, and deletes them by
	// their policies.
	RunHooks Action = "hooks"
	// Adopt makes berth the owner of the fields Helm set on the step's objects.
	Adopt Action = "adopt"
	// Validate runs the step's objects through the API server's validation and admission with a
	// server-side dry run: objects whose kinds the release's own CRDs define, once those are
	// Established.
	Validate Action = "validate"
	// RemoveHooks deletes the hook objects of Hook that an interrupted run of it left, before the
	// operation that run belonged to is undone or replaced.
	RemoveHooks Action = "remove-hooks"
	// CreateNamespace creates the release's namespace, Objects' one Namespace
	// (--create-namespace); DeleteNamespace deletes the one the operation created, when the
	// operation stops before its first change to anything else.
	CreateNamespace Action = "create-namespace"
	DeleteNamespace Action = "delete-namespace"
	// Watch watches the step's objects, Ready, for Window.For (--watch-for): a regression in
	// the window (an object no longer ready past Window.Tolerance, or failed, a container that
	// restarts more than Window.Restarts times, a Pod that ends Failed) fails it.
	Watch Action = "watch"
)

// Change is what an operation does, or would do, to one object: the one vocabulary of the
// engine's change sets, the counts a Release's status keeps and berth diff.
type Change string

const (
	Created    Change = "created"
	Configured Change = "configured"
	Unchanged  Change = "unchanged"
	Deleted    Change = "deleted"
	// Kept objects leave the release but stay in the cluster (helm.sh/resource-policy: keep):
	// nothing is done to them.
	Kept Change = "kept"
	// Gone: an object to delete was gone already.
	Gone Change = "already gone"
)

// Window is how a Watch step watches its objects.
type Window struct {
	// For is how long the window lasts, from when it starts.
	For time.Duration `json:"for"`
	// Tolerance is how long an object may stay not ready before that is a regression.
	Tolerance time.Duration `json:"tolerance,omitempty"`
	// Restarts is how many times each container may restart in the window.
	Restarts int `json:"restarts,omitempty"`
}

// Left is what is left at now of the window that started at started; all of it when it has not
// started (started is zero), nothing once it is over.
func (w Window) Left(started, now time.Time) time.Duration {
	if started.IsZero() {
		return w.For
	}
	return max(w.For-now.Sub(started), 0)
}

// Step is one unit of work. Steps run in order; the objects of one step are independent of each
// other.
type Step struct {
	// ID is stable for the same inputs, e.g. "apply/Deployment.apps".
	ID      string              `json:"id"`
	Action  Action              `json:"action"`
	Objects []resource.Identity `json:"objects"`
	// Reason says why the step is there, for people.
	Reason string `json:"reason"`
	// Hook is the hook event of a RunHooks step.
	Hook string `json:"hook,omitempty"`
	// Status is what a Record step records: a release status (pending-install, deployed,
	// superseded, uninstalling, uninstalled, failed), "purged" (every record deleted) or "tested"
	// (the last run of each test of the revision, its status left as it is).
	Status string `json:"status,omitempty"`
	// Revision is the revision a Record step writes.
	Revision int `json:"revision,omitempty"`
	// Supersedes are the revisions a Record step that records a revision deployed marks
	// superseded, in the same step: there is always a deployed revision to roll back to.
	Supersedes []int `json:"supersedes,omitempty"`
	// UIDs, for a Delete or WaitAbsent step, are the UIDs its objects had when the plan was
	// built, in the order of Objects ("" where none was observed): an object deleted and
	// created again since, by someone else, is another object and is left alone, also when a
	// journalled plan is resumed later.
	UIDs []types.UID `json:"uids,omitempty"`
	// Beside marks a step that runs beside the steps after it: it starts in its place, and the
	// first later step that names any of its objects, or the end of the plan, waits for its
	// outcome first.
	Beside bool `json:"beside,omitempty"`
	// Window is how a Watch step watches its objects.
	Window *Window `json:"window,omitempty"`
}

// Plan is an operation's ordered steps.
type Plan struct {
	Steps []Step `json:"steps"`
	// Kept are objects that leave the release but stay in the cluster (helm.sh/resource-policy:
	// keep).
	Kept []resource.Identity `json:"kept,omitempty"`
}

// Input is what a plan is built from. Objects are normalized (namespaces set as the API server
// sees them).
type Input struct {
	// CRDs are the chart's crds/ directory: applied first and waited for (Established).
	CRDs []*unstructured.Unstructured
	// Desired are the objects the release should have after the operation.
	Desired []*unstructured.Unstructured
	// Recorded are the objects of the revision being replaced (nothing on install).
	Recorded []*unstructured.Unstructured
	// Live holds the live state of recorded objects that still exist, by identity; the keep
	// policy on a live object counts as on the recorded one, and deletions go by its UID.
	Live map[resource.Identity]*unstructured.Unstructured
	// Wait adds steps that wait for readiness and, for deletions, for the objects to be gone.
	Wait bool
	// Late are desired objects whose kinds the release's own CRDs define: the API server cannot
	// validate them before those CRDs are Established. A Validate step checks them before the
	// first step that applies any of them.
	Late []resource.Identity
	// Batches, when set, order the objects as the chart declares (--wait=ordered, HIP-0025):
	// each batch's objects are applied in the stages of Helm's order and waited for before the
	// next batch. An uninstall (no Desired objects) deletes them batch by batch in reverse, each
	// waited for until gone.
	Batches []sequence.Batch
	// Replace are desired objects to delete (by their UID in Live) and create again, because
	// the API server refuses to change their immutable fields (--force-replace): each is
	// deleted, and waited for until gone, just before the step that applies it.
	Replace []resource.Identity
}

// build returns the steps of Build but the replacements (replace.go).
func build(in Input) (*Plan, error) {
	p := &Plan{}
	seen := map[resource.Identity]bool{}
	for _, obj := range append(slices.Clone(in.CRDs), in.Desired...) {
		id := resource.IdentityOf(obj)
		if seen[id] {
			return nil, fmt.Errorf("%s: defined twice in the release", id)
		}
		seen[id] = true
	}
	if len(in.CRDs) > 0 {
		ids := identities(in.CRDs)
		p.Steps = append(p.Steps,
			Step{ID: "apply/crds", Action: Apply, Objects: ids, Reason: "CustomResourceDefinitions from crds/ first"},
			Step{ID: "wait-ready/crds", Action: WaitReady, Objects: ids, Reason: "CustomResourceDefinitions must be Established before they are used"},
		)
	}
	if len(in.Batches) > 0 {
		return buildOrdered(in, p)
	}
	desired := resource.SortForInstall(in.Desired)
	late := slices.Clone(in.Late)
	slices.SortFunc(late, resource.Compare)
	validateLate := Step{ID: "validate/late", Action: Validate, Objects: late}
	if len(late) > 0 && len(in.CRDs) > 0 && !slices.ContainsFunc(desired, isCRD) {
		// The custom resources of kinds the release's CRDs define are validated as soon as
		// those are Established, beside the applies of the kinds Helm's order puts before them.
		validateLate.Beside = true
		validateLate.Reason = "objects of kinds the release's CRDs define, validated once those are Established, beside the applies that follow; none is applied before all pass"
		p.Steps = append(p.Steps, validateLate)
		late = nil
	}
	for _, stage := range resource.InstallStages(desired) {
		kind := stageKind(stage)
		ids := identities(stage)
		if len(late) > 0 && slices.ContainsFunc(ids, func(id resource.Identity) bool { return slices.Contains(late, id) }) {
			validateLate.Reason = "objects of kinds the release's CRDs define, validated once those are Established; none is applied before all pass"
			p.Steps = append(p.Steps, validateLate)
			late = nil
		}
		p.Steps = append(p.Steps, Step{ID: "apply/" + kind, Action: Apply, Objects: ids, Reason: "install order: " + describeKind(kind)})
		if crds := identities(slices.DeleteFunc(slices.Clone(stage), notCRD)); len(crds) > 0 {
			p.Steps = append(p.Steps, Step{ID: "wait-ready/" + crdKind, Action: WaitReady, Objects: crds,
				Reason: "CustomResourceDefinitions must be Established before they are used"})
		}
	}

	deleted := p.deleteGone(p.gone(in, seen), in.Live)
	if in.Wait {
		if ready := identities(desired); len(ready) > 0 {
			p.Steps = append(p.Steps, Step{ID: "wait-ready", Action: WaitReady, Objects: ready, Reason: "waiting: every object ready"})
		}
		p.waitAbsent(deleted, in.Live)
	}
	return p, nil
}

// deleteGone adds the steps that delete gone, the objects that left the release, in the stages
// of Helm's uninstall order, and returns what they delete.
func (p *Plan) deleteGone(gone []*unstructured.Unstructured, live map[resource.Identity]*unstructured.Unstructured) []resource.Identity {
	var deleted []resource.Identity
	for _, stage := range resource.UninstallStages(resource.SortForUninstall(gone)) {
		kind := stageKind(stage)
		ids := identities(stage)
		deleted = append(deleted, ids...)
		p.Steps = append(p.Steps, Step{ID: "delete/" + kind, Action: Delete, Objects: ids, UIDs: uidsOf(ids, live),
			Reason: "left the release; uninstall order: " + describeKind(kind)})
	}
	return deleted
}

// waitAbsent adds the step that waits until deleted are gone, if there are any.
func (p *Plan) waitAbsent(deleted []resource.Identity, live map[resource.Identity]*unstructured.Unstructured) {
	if len(deleted) > 0 {
		p.Steps = append(p.Steps, Step{ID: "wait-absent", Action: WaitAbsent, Objects: deleted, UIDs: uidsOf(deleted, live),
			Reason: "waiting: every deleted object gone"})
	}
}

// gone returns the recorded objects that leave the release (not in seen, the desired ones) and
// are not kept; the kept ones it adds to p.Kept.
func (p *Plan) gone(in Input, seen map[resource.Identity]bool) []*unstructured.Unstructured {
	var gone []*unstructured.Unstructured
	for _, obj := range in.Recorded {
		id := resource.IdentityOf(obj)
		if seen[id] {
			continue
		}
		if resource.IsKept(obj) || (in.Live[id] != nil && resource.IsKept(in.Live[id])) {
			p.Kept = append(p.Kept, id)
			continue
		}
		gone = append(gone, obj)
	}
	return gone
}

func isCRD(obj *unstructured.Unstructured) bool { return obj.GetKind() == "CustomResourceDefinition" }

func notCRD(obj *unstructured.Unstructured) bool { return !isCRD(obj) }

// crdKind is the group and kind of CustomResourceDefinitions, as a step names them.
const crdKind = "CustomResourceDefinition.apiextensions.k8s.io"

// otherKinds names a step of objects of several kinds that Helm's order does not name.
const otherKinds = "other-kinds"

// stageKind names a stage of InstallStages: its group and kind, its kinds joined by "+" when
// it has several of Helm's order, or otherKinds for several kinds the order does not name (a
// stage of those has no other).
func stageKind(stage []*unstructured.Unstructured) string {
	var kinds []string
	for _, obj := range stage {
		if gk := resource.IdentityOf(obj).GroupKind().String(); !slices.Contains(kinds, gk) {
			kinds = append(kinds, gk)
		}
	}
	if len(kinds) > 1 && !resource.Ordered(stage[len(stage)-1].GetKind()) {
		return otherKinds
	}
	return strings.Join(kinds, "+")
}

func describeKind(kind string) string {
	switch {
	case kind == otherKinds:
		return "kinds Helm's order does not name, together, after the others"
	case strings.Contains(kind, "+"):
		return strings.ReplaceAll(kind, "+", ", ") + ", together: none depends on another"
	}
	return kind
}

func identities(objs []*unstructured.Unstructured) []resource.Identity {
	ids := make([]resource.Identity, len(objs))
	for i, obj := range objs {
		ids[i] = resource.IdentityOf(obj)
	}
	return ids
}

// uidsOf returns the UID of the live object of each of ids, "" for those not live.
func uidsOf(ids []resource.Identity, live map[resource.Identity]*unstructured.Unstructured) []types.UID {
	out := make([]types.UID, len(ids))
	for i, id := range ids {
		if obj := live[id]; obj != nil {
			out[i] = obj.GetUID()
		}
	}
	return out
}

// UID returns the UID the step observed for its object id, "" when it observed none.
func (s Step) UID(id resource.Identity) types.UID {
	if i := slices.Index(s.Objects, id); i >= 0 && i < len(s.UIDs) {
		return s.UIDs[i]
	}
	return ""
}

// Objects returns the steps whose action acts on the release's objects (apply, delete and their
// waits), without the lifecycle's own.
func (p *Plan) Objects() []Step {
	var out []Step
	for _, s := range p.Steps {
		switch s.Action {
		case Apply, WaitReady, Delete, WaitAbsent:
			out = append(out, s)
		}
	}
	return out
}

// String renders the plan for people, one step a line and its objects below it.
func (p *Plan) String() string {
	var b strings.Builder
	for i, s := range p.Steps {
		fmt.Fprintf(&b, "%d. %s (%s)\n", i+1, s.ID, s.Reason)
		for _, id := range s.Objects {
			fmt.Fprintf(&b, "     %s\n", id)
		}
	}
	for _, id := range p.Kept {
		fmt.Fprintf(&b, "kept (helm.sh/resource-policy: keep): %s\n", id)
	}
	return b.String()
}
