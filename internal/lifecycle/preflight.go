package lifecycle

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/doctor"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// preflight runs o.Preflight, if any, on the requests plan pl of operation op on rel will make:
// once an operation, for its own plan (not an interrupted operation it finishes first, nor the
// undo of its failure). facts are the records of the objects the plan names: each as the
// operation applies it (or as recorded, for what it deletes), as it is live and as the API
// server's dry run returned it (nil when it did not run).
func (o *operation) preflight(ctx context.Context, op release.Operation, rel *release.Release, pl *plan.Plan, facts *plan.Objects) error {
	if o.Preflight == nil || o.recovering || o.preflighted {
		return nil
	}
	o.preflighted = true
	reqs := append(requests(o.Cluster, rel, pl, facts), o.bookkeeping(rel.Name, pl)...)
	return o.Preflight(ctx, op, rel.Name, reqs)
}

// preflightAhead starts the reads of the operation's preflight of op (Deps.PreflightAhead),
// when it will run one.
func (o *operation) preflightAhead(ctx context.Context, op release.Operation) {
	if o.Preflight == nil || o.PreflightAhead == nil || o.recovering || o.preflighted {
		return
	}
	o.PreflightAhead(ctx, op)
}

// requests are the requests the API server receives from plan pl, as admission sees them: each
// object applied is created or updated (an update changes the spec when the dry run moved its
// generation), each object deleted is deleted, each object adopted is updated, and each hook is
// created (and deleted, when its delete policy says so); an object deleted before it is applied
// (replaced) is created again. What controllers make of them (a Deployment's Pods) the preflight
// adds.
func requests(c Cluster, rel *release.Release, pl *plan.Plan, facts *plan.Objects) []doctor.Request {
	var out []doctor.Request
	deleted := map[resource.Identity]bool{}
	for _, step := range pl.Steps {
		switch step.Action {
		case plan.Apply, plan.Adopt:
			for _, id := range step.Objects {
				obj := facts.Named(id)
				if obj == nil {
					continue
				}
				f := facts.Get(id)
				live := f.Live
				if deleted[id] {
					live = nil
				}
				switch {
				case live == nil:
					out = append(out, doctor.Request{Operation: admissionv1.Create, Object: obj})
				case step.Action == plan.Adopt:
					out = append(out, doctor.Request{Operation: admissionv1.Update, Object: obj, Old: live})
				default:
					out = append(out, doctor.Request{Operation: admissionv1.Update, Object: obj, Old: live,
						SpecChanged: specChanged(live, f.Applied)})
				}
			}
		case plan.Delete:
			for _, id := range step.Objects {
				deleted[id] = true
				if obj := facts.Named(id); obj != nil {
					out = append(out, doctor.Request{Operation: admissionv1.Delete, Object: obj})
				}
			}
		case plan.RunHooks:
			out = append(out, hookRequests(c, rel, step)...)
		}
	}
	return out
}

// bookkeeping are the requests of an operation's own writes: the records its Record steps write
// (a pending revision created, revisions updated, every record deleted when purged) and its
// journal, created, updated after each step and deleted at the end.
func (o *operation) bookkeeping(name string, pl *plan.Plan) []doctor.Request {
	var out []doctor.Request
	record := func(op admissionv1.OperationType, version int, status release.Status) {
		if obj := o.Store.RecordObject(name, version, status); obj != nil {
			out = append(out, doctor.Request{Operation: op, Object: obj, Old: obj,
				What: fmt.Sprintf("the record of revision %d (%s)", version, resource.IdentityOf(obj))})
		}
	}
	for _, step := range pl.Steps {
		if step.Action != plan.Record {
			continue
		}
		status := release.Status(step.Status)
		switch status {
		case release.StatusPendingInstall, release.StatusPendingUpgrade, release.StatusPendingRollback:
			record(admissionv1.Create, step.Revision, status)
		case statusPurged:
			record(admissionv1.Delete, step.Revision, release.StatusUninstalling)
		default:
			record(admissionv1.Update, step.Revision, status)
		}
		for _, v := range step.Supersedes {
			record(admissionv1.Update, v, release.StatusSuperseded)
		}
	}
	if o.Journals != nil && len(pl.Steps) > 0 {
		if obj := o.Journals.Object(name); obj != nil {
			what := fmt.Sprintf("the operation's journal (%s)", resource.IdentityOf(obj))
			for _, op := range []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete} {
				out = append(out, doctor.Request{Operation: op, Object: obj, Old: obj, What: what})
			}
		}
	}
	return out
}

// hookRequests are the requests of the hooks a RunHooks step runs.
func hookRequests(c Cluster, rel *release.Release, step plan.Step) []doctor.Request {
	_, hooks, err := hooksOf(rel)
	if err != nil {
		return nil
	}
	var out []doctor.Request
	for _, h := range resource.HooksFor(hooks, resource.HookEvent(step.Hook)) {
		obj := h.Object.DeepCopy()
		if c.Normalize(obj, rel.Namespace) != nil {
			continue
		}
		h.Object = obj
		out = append(out, doctor.HookRequests(h)...)
	}
	return out
}

// specChanged says whether applying an object changes its spec: the API server's dry run of the
// apply moved its generation. Without a dry run's answer, it may.
func specChanged(live, applied *unstructured.Unstructured) bool {
	return live == nil || applied == nil || live.GetGeneration() == 0 || applied.GetGeneration() != live.GetGeneration()
}
