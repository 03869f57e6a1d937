package plan

import (
	"fmt"
	"strings"

	"github.com/berthdev/berth/internal/resource"
)

// Build returns the steps that take the cluster from Recorded to Desired: CRDs, then desired
// objects in the stages of Helm's install order (waiting for CRDs defined by the release before
// objects of later kinds), then deletion of recorded objects that left the release, in the stages of
// Helm's uninstall order, unless kept; then the waits. The objects of Replace are deleted and waited
// for until gone just before the step that applies them, which then creates them again.
func Build(in Input) (*Plan, error) {
	p, err := build(in)
	if err != nil || len(in.Replace) == 0 {
		return p, err
	}
	return p.replacing(in)
}

// Replacement steps' IDs start with these: the deletion of the objects an apply step creates
// again, and the wait until they are gone.
const (
	replaceDelete = "replace/delete/"
	replaceWait   = "replace/wait-absent/"
)

// replacing inserts, before the first step that applies any object of in.Replace, a step that
// deletes those of its objects by the UIDs they have in in.Live, and a step that waits until
// they are gone. An object to replace must be live and applied by the plan.
func (p *Plan) replacing(in Input) (*Plan, error) {
	todo := map[resource.Identity]bool{}
	for _, id := range in.Replace {
		if obj := in.Live[id]; obj == nil || obj.GetUID() == "" {
			return nil, fmt.Errorf("%s: to be replaced, but it is not live", id)
		}
		todo[id] = true
	}
	var steps []Step
	for _, s := range p.Steps {
		var ids []resource.Identity
		if s.Action == Apply {
			for _, id := range s.Objects {
				if todo[id] {
					ids = append(ids, id)
					delete(todo, id)
				}
			}
		}
		if len(ids) > 0 {
			at := strings.TrimPrefix(s.ID, "apply/")
			uids := uidsOf(ids, in.Live)
			steps = append(steps,
				Step{ID: replaceDelete + at, Action: Delete, Objects: ids, UIDs: uids,
					Reason: "replaced (--force-replace): the API server refuses to change their immutable fields, so they are deleted by UID and created again by " + s.ID},
				Step{ID: replaceWait + at, Action: WaitAbsent, Objects: ids, UIDs: uids,
					Reason: "replaced objects gone before they are created again"})
		}
		steps = append(steps, s)
	}
	for _, id := range in.Replace {
		if todo[id] {
			return nil, fmt.Errorf("%s: to be replaced, but the plan does not apply it", id)
		}
	}
	p.Steps = steps
	return p, nil
}

// Replaced returns the objects the plan deletes in order to create them again.
func (p *Plan) Replaced() map[resource.Identity]bool {
	out := map[resource.Identity]bool{}
	for _, s := range p.Steps {
		if s.Action == Delete && strings.HasPrefix(s.ID, replaceDelete) {
			for _, id := range s.Objects {
				out[id] = true
			}
		}
	}
	return out
}
