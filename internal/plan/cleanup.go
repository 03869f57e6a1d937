package plan

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/resource"
)

// Cleanup is the plan that deletes created, the objects a failed operation created (Helm's
// --cleanup-on-fail), in the stages of Helm's uninstall order, each by its UID in live, and then
// waits until every one of them is gone. Objects without a live object are left out: there is
// nothing of them to delete.
func Cleanup(created []*unstructured.Unstructured, live map[resource.Identity]*unstructured.Unstructured) *Plan {
	var present []*unstructured.Unstructured
	for _, obj := range created {
		if live[resource.IdentityOf(obj)] != nil {
			present = append(present, obj)
		}
	}
	p := &Plan{}
	p.waitAbsent(p.deleteGone(present, live), live)
	for i := range p.Steps {
		s := &p.Steps[i]
		s.ID = "cleanup/" + s.ID
		if s.Action == Delete {
			s.Reason = "created by the operation that failed; uninstall order: " + describeKind(s.ID[len("cleanup/delete/"):])
		} else {
			s.Reason = "waiting: every object the failed operation created gone"
		}
	}
	return p
}
