package lifecycle

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// CorrectOptions describe a drift correction: the objects of a release's deployed revision that
// differ from it in the cluster are applied again, without a new revision.
type CorrectOptions struct {
	Name string
	// WaitOptions bound the correction (Timeout) and the wait for the release's lease
	// (WaitForLock); nothing is waited for once applied.
	WaitOptions
	// Find finds, once the correction holds the release's lease, the objects of last, the
	// release's deployed revision, that differ from it in the cluster, each as it is to be
	// applied to put it back; none when nothing differs.
	Find func(ctx context.Context, last *release.Release) ([]*unstructured.Unstructured, error)
}

// CorrectResult is what a drift correction found and did.
type CorrectResult struct {
	// Revision is the release's last revision, the one whose objects were put back.
	Revision int
	// Corrected are the objects applied again; none when nothing differed any more.
	Corrected []resource.Identity
	// Runs are the plans the correction executed.
	Runs []Run
}

// NotDeployedError says a release's drift is not corrected: its last revision is not deployed,
// or an operation on it was interrupted, which the next upgrade or recover finishes first.
type NotDeployedError struct {
	Release  string
	Revision int
	Status   release.Status
	// Interrupted, when set, is the operation left unfinished.
	Interrupted *Interrupted
}

func (e *NotDeployedError) Error() string {
	if e.Interrupted != nil {
		return fmt.Sprintf("release %s: %s: drift is corrected once it is finished", e.Release, e.Interrupted.Describe())
	}
	return fmt.Sprintf("release %s revision %d is %s: drift is corrected once it is deployed", e.Release, e.Revision, e.Status)
}

// CorrectDrift puts back the objects of a release's deployed revision that differ from it in the
// cluster, as an operation: it holds the release's lease, finds what differs under it (o.Find),
// and applies those objects through the engine as a journalled plan of one apply step, so that
// what blocks an object is named as in any operation. A correction stopped midway leaves its
// journal, which the next operation on the release deletes: a correction is not finished from
// its journal, since only Find knows what to apply (the next check finds and corrects what still
// differs). An operation left interrupted is not finished here: the correction is refused
// (*NotDeployedError) until it is.
func CorrectDrift(ctx context.Context, d Deps, o CorrectOptions) (*CorrectResult, error) {
	out := &CorrectResult{}
	op := d.start(o.Name, ctx)
	defer func() { out.Runs = op.runs.all() }()
	err := op.operate(ctx, o.WaitOptions, func(ctx context.Context) error {
		s, err := op.readState(ctx, o.Name)
		if err != nil {
			return err
		}
		if in := s.Interrupted; in != nil && !in.Stale {
			return &NotDeployedError{Release: o.Name, Interrupted: in}
		} else if in != nil {
			// A journal left after its operation ended (a correction killed midway, say): it
			// is deleted, whatever the correction then finds.
			if err := op.end(ctx, true); err != nil {
				return err
			}
		}
		last := s.Last
		if last == nil {
			_, err := d.Store.Last(ctx, o.Name) // says the release is not found
			return err
		}
		out.Revision = last.Version
		if last.Info.Status != release.StatusDeployed {
			return &NotDeployedError{Release: o.Name, Revision: last.Version, Status: last.Info.Status}
		}
		objs, err := o.Find(ctx, last)
		if err != nil || len(objs) == 0 {
			return err
		}
		if err := op.correct(ctx, last, objs); err != nil {
			return err
		}
		out.Corrected = identities(objs)
		return nil
	})
	return out, err
}

// correct applies objs, the objects of revision last that differ in the cluster, as a journalled
// plan of one apply step.
func (o *operation) correct(ctx context.Context, last *release.Release, objs []*unstructured.Unstructured) error {
	pl := &plan.Plan{Steps: []plan.Step{{ID: "apply/drifted", Action: plan.Apply, Objects: identities(objs),
		Reason: fmt.Sprintf("put back as revision %d records them", last.Version)}}}
	pl, err := o.begin(ctx, release.OpCorrect, last.Version, pl, release.JournalOptions{})
	if err != nil {
		return err
	}
	var facts plan.Objects
	for _, obj := range objs {
		facts.Desire(obj, false)
	}
	opts := o.engineOptions(&facts, WaitOptions{})
	_, err = o.execute(ctx, release.OpCorrect, last.Version, pl, &runner{d: o, rel: last}, opts)
	return err
}
