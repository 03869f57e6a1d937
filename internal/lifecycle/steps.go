package lifecycle

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// An operation is one plan: what it records, the hooks it runs, what it adopts and validates, and
// the object steps plan.Build orders. This file holds the plan's shape: which steps an install,
// upgrade, rollback or uninstall has, and in what order, from what is known before anything
// changes. runner.go runs the lifecycle's own steps; execute.go executes plans through the
// engine, which journals every step alike (journal.go).

// hookStep is one event's hooks, in the order they run.
type hookStep struct {
	event resource.HookEvent
	hooks []resource.Hook
}

// revisionSteps are what an install, upgrade or rollback does besides its object steps.
type revisionSteps struct {
	op       release.Operation
	revision int
	// create records the revision as pending first; not when it is recorded already (an
	// interrupted operation being finished from its record).
	create    bool
	pre, post hookStep
	// adopted are existing objects with fields Helm set.
	adopted []resource.Identity
	// superseded are the revisions that were deployed and are superseded once this one is.
	superseded []int
	// replaced is the uninstalled revision whose name an install takes (replace), marked
	// superseded once the new one is recorded; 0 for none.
	replaced int
	// watch, when set, is the watch window of the revision's objects (watched) once they are
	// ready and the post hooks ran, before the revision is recorded deployed.
	watch   *plan.Window
	watched []resource.Identity
}

// revisionPlan is the plan of an install, upgrade or rollback: record the revision as pending,
// run the pre hooks, adopt Helm's fields, apply, wait and delete (objects), run the post hooks,
// watch the objects for the window (--watch-for), mark the replaced revisions superseded and the
// new one deployed.
func revisionPlan(objects *plan.Plan, pol revisionSteps) *plan.Plan {
	p := &plan.Plan{Kept: objects.Kept}
	if pol.create {
		p.Steps = append(p.Steps, recordStep(pendingStatus(pol.op), pol.revision, "the revision is recorded before anything changes"))
	}
	if pol.replaced > 0 {
		p.Steps = append(p.Steps, recordStep(release.StatusSuperseded, pol.replaced,
			fmt.Sprintf("the install takes the name of the uninstalled release, superseded by revision %d", pol.revision)))
	}
	p.Steps = appendHooks(p.Steps, pol.pre)
	if len(pol.adopted) > 0 {
		p.Steps = append(p.Steps, plan.Step{ID: "adopt", Action: plan.Adopt, Objects: pol.adopted,
			Reason: "berth takes over the fields Helm set, so that what left the chart is removed"})
	}
	p.Steps = append(p.Steps, objects.Steps...)
	p.Steps = appendHooks(p.Steps, pol.post)
	if pol.watch != nil && pol.watch.For > 0 {
		p.Steps = append(p.Steps, watchStep(pol.revision, pol.watched, *pol.watch))
	}
	deployed := recordStep(release.StatusDeployed, pol.revision, "the operation completed")
	if len(pol.superseded) > 0 {
		deployed.Supersedes = pol.superseded
		var vs []string
		for _, v := range pol.superseded {
			vs = append(vs, strconv.Itoa(v))
		}
		deployed.Reason += fmt.Sprintf("; revision %s superseded first", strings.Join(vs, ", "))
	}
	p.Steps = append(p.Steps, deployed)
	return p
}

// watchStep is the watch window of revision's objects ids.
func watchStep(revision int, ids []resource.Identity, w plan.Window) plan.Step {
	restarts := "no container may restart"
	if w.Restarts > 0 {
		restarts = fmt.Sprintf("a container may restart %d time(s)", w.Restarts)
	}
	return plan.Step{ID: fmt.Sprintf("%s/%d", plan.Watch, revision), Action: plan.Watch, Objects: ids, Window: &w,
		Reason: fmt.Sprintf("watch %d objects for %s before revision %d is recorded deployed: each must stay ready (not ready for %s at most), %s, no Pod may fail",
			len(ids), w.For, revision, w.Tolerance, restarts)}
}

// uninstallPolicy is what an uninstall does besides deleting objects.
type uninstallPolicy struct {
	revision    int
	pre, post   hookStep
	keepHistory bool
}

// uninstallPlan is the plan of an uninstall: every pre-delete hook to completion before anything
// is deleted, the release recorded as uninstalling, the deletions and their waits, the post-delete
// hooks, then the records removed (or kept, marked uninstalled).
func uninstallPlan(objects *plan.Plan, pol uninstallPolicy) *plan.Plan {
	p := &plan.Plan{Kept: objects.Kept}
	p.Steps = appendHooks(p.Steps, pol.pre)
	p.Steps = append(p.Steps, recordStep(release.StatusUninstalling, pol.revision, "deletion starts"))
	p.Steps = append(p.Steps, objects.Steps...)
	p.Steps = appendHooks(p.Steps, pol.post)
	if pol.keepHistory {
		p.Steps = append(p.Steps, recordStep(release.StatusUninstalled, pol.revision, "the history is kept"))
	} else {
		p.Steps = append(p.Steps, purgeStep())
	}
	return p
}

// purgeStep deletes every record of the release.
func purgeStep() plan.Step {
	return plan.Step{ID: "record/purged", Action: plan.Record, Status: statusPurged, Reason: "every record of the release is deleted"}
}

// statusPurged is the Status of the Record step that deletes every record of a release.
const statusPurged = "purged"

// statusDeleted is the Status of the Record step that deletes the incomplete record an
// interrupted operation left, its parts with it; statusSwept, of the one that deletes the parts
// that the records of its revisions do not name.
const (
	statusDeleted = "deleted"
	statusSwept   = "parts-swept"
)

// deleteRecordStep deletes the incomplete record of revision, which an operation interrupted
// while it wrote it left: nothing else of that operation had changed.
func deleteRecordStep(revision int) plan.Step {
	return plan.Step{ID: fmt.Sprintf("record/%s/%d", statusDeleted, revision), Action: plan.Record, Status: statusDeleted, Revision: revision,
		Reason: fmt.Sprintf("revision %d was interrupted while its record was written: the incomplete record is deleted", revision)}
}

// sweepStep deletes the parts that the records of revision and of the revisions it superseded do
// not name: an update of one of those records stopped midway leaves them.
func sweepStep(revision int, superseded []int) plan.Step {
	return plan.Step{ID: fmt.Sprintf("record/%s/%d", statusSwept, revision), Action: plan.Record, Status: statusSwept, Revision: revision,
		Supersedes: superseded, Reason: "the parts no record names, left by an update stopped midway, are deleted"}
}

func recordStep(status release.Status, revision int, why string) plan.Step {
	return plan.Step{ID: fmt.Sprintf("record/%s/%d", status, revision), Action: plan.Record, Status: string(status), Revision: revision,
		Reason: fmt.Sprintf("record revision %d as %s: %s", revision, status, why)}
}

// appendHooks appends the step that runs the hooks of h, if there are any.
func appendHooks(steps []plan.Step, h hookStep) []plan.Step {
	if len(h.hooks) == 0 {
		return steps
	}
	ids := make([]resource.Identity, len(h.hooks))
	var parts []string
	for i, hk := range h.hooks {
		ids[i] = hk.Identity
		desc := fmt.Sprintf("%s weight %d", hk.Identity.Name, hk.Weight)
		if len(hk.DeletePolicies) > 0 {
			var ps []string
			for _, p := range hk.DeletePolicies {
				ps = append(ps, string(p))
			}
			desc += ", delete " + strings.Join(ps, ",")
		}
		parts = append(parts, desc)
	}
	return append(steps, plan.Step{ID: "hooks/" + string(h.event), Action: plan.RunHooks, Hook: string(h.event), Objects: ids,
		Reason: fmt.Sprintf("%s hooks, in order, each to its outcome: %s", h.event, strings.Join(parts, "; "))})
}

func pendingStatus(op release.Operation) release.Status {
	switch op {
	case release.OpInstall:
		return release.StatusPendingInstall
	case release.OpRollback:
		return release.StatusPendingRollback
	}
	return release.StatusPendingUpgrade
}

// eventHooks returns the hooks of rel for event, in the order they run, each with its identity as
// the API server sees it; none when skip.
func eventHooks(c Cluster, rel *release.Release, event resource.HookEvent, skip bool) (hookStep, error) {
	h := hookStep{event: event}
	if skip || rel == nil {
		return h, nil
	}
	_, plain, err := hooksOf(rel)
	if err != nil {
		return h, err
	}
	for _, hk := range resource.HooksFor(plain, event) {
		if obj := hk.Object.DeepCopy(); c.Normalize(obj, rel.Namespace) == nil {
			hk.Identity = resource.IdentityOf(obj)
		}
		h.hooks = append(h.hooks, hk)
	}
	return h, nil
}

// lateIdentities are the objects whose kinds the release's CRDs define and the API server does not
// serve yet.
func (p *prepared) lateIdentities() []resource.Identity {
	var out []resource.Identity
	for _, obj := range p.objects {
		if p.pendingKinds[obj.GroupVersionKind().GroupKind()] {
			out = append(out, resource.IdentityOf(obj))
		}
	}
	return out
}

// identities returns the identity of each object.
func identities(objs []*unstructured.Unstructured) []resource.Identity {
	out := make([]resource.Identity, len(objs))
	for i, obj := range objs {
		out[i] = resource.IdentityOf(obj)
	}
	return out
}

// leftoverHooksPlan is the plan that removes what the hooks of interrupted operation in left:
// for each of its hook events its journal does not record as done, every hook object of the
// event, whatever its delete policy.
func leftoverHooksPlan(c Cluster, in *Interrupted) (*plan.Plan, error) {
	p := &plan.Plan{}
	for _, event := range hookEvents(in.Operation) {
		if in.Journal.HookDone(string(event)) {
			continue
		}
		h, err := eventHooks(c, in.Last, event, false)
		if err != nil {
			return nil, err
		}
		if len(h.hooks) == 0 {
			continue
		}
		ids := make([]resource.Identity, len(h.hooks))
		for i, hk := range h.hooks {
			ids[i] = hk.Identity
		}
		p.Steps = append(p.Steps, plan.Step{ID: "remove-hooks/" + string(event), Action: plan.RemoveHooks, Hook: string(event),
			Objects: ids,
			Reason:  fmt.Sprintf("the interrupted %s left its %s hooks unfinished: their objects are removed", in.Operation, event)})
	}
	return p, nil
}

// hookEvents are the hook events of operation op, in the order they run.
func hookEvents(op release.Operation) []resource.HookEvent {
	switch op {
	case release.OpInstall:
		return []resource.HookEvent{resource.HookPreInstall, resource.HookPostInstall}
	case release.OpUpgrade:
		return []resource.HookEvent{resource.HookPreUpgrade, resource.HookPostUpgrade}
	case release.OpRollback:
		return []resource.HookEvent{resource.HookPreRollback, resource.HookPostRollback}
	case release.OpTest:
		return []resource.HookEvent{resource.HookTest}
	}
	return []resource.HookEvent{resource.HookPreDelete, resource.HookPostDelete}
}

// namespacePlan is the plan of one step that creates (plan.CreateNamespace) or deletes
// (plan.DeleteNamespace) the release's namespace ns.
func namespacePlan(action plan.Action, ns string) *plan.Plan {
	why := "--create-namespace: the release's namespace does not exist; everything else is checked in it once it does"
	if action == plan.DeleteNamespace {
		why = "the operation created the namespace and stopped before anything else changed"
	}
	return &plan.Plan{Steps: []plan.Step{{ID: string(action) + "/" + ns, Action: action,
		Objects: []resource.Identity{{Kind: "Namespace", Name: ns}}, Reason: why}}}
}

// revisionPlan builds the object steps from in and wraps them per pol, with rel's hooks of the
// operation's events (none with noHooks).
func (o *operation) revisionPlan(in plan.Input, pol revisionSteps, rel *release.Release, noHooks bool) (*plan.Plan, error) {
	events := hookEvents(pol.op)
	pre, post := events[0], events[1]
	objects, err := plan.Build(in)
	if err != nil {
		return nil, err
	}
	if pol.pre, err = eventHooks(o.Cluster, rel, pre, noHooks); err != nil {
		return nil, err
	}
	if pol.post, err = eventHooks(o.Cluster, rel, post, noHooks); err != nil {
		return nil, err
	}
	return revisionPlan(objects, pol), nil
}

// statusStopped is the Status of the Record step that records how far an uninstall that stopped
// got: the revision as it stands, with the last run of each hook it ran; its status stays what it
// is (uninstalling once the deletion started).
const statusStopped = "stopped"

// stoppedStep is the Record step of an uninstall of rel that stopped.
func stoppedStep(rel *release.Release) plan.Step {
	return plan.Step{ID: fmt.Sprintf("record/%s/%d", statusStopped, rel.Version), Action: plan.Record,
		Status: statusStopped, Revision: rel.Version,
		Reason: fmt.Sprintf("record how far the uninstall got in revision %d, which stays %s", rel.Version, rel.Info.Status)}
}
