package lifecycle

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// A journal is a Secret in the release's namespace: whoever may write Secrets there may write
// one by hand. What it says is therefore input, not authority: its options never grant more
// than the caller of the operation that resumes it does (Grants), and its plan may only touch
// what the release's record holds (checkJournalPlan).

// Grants are what the caller of an operation (its flags, or a Release's spec) allows an
// interrupted operation's resumption to do beyond the defaults. Of the options a journal
// records (release.JournalOptions), TakeOwnership and NoHooks widen what berth does: taking
// objects other releases own, and leaving out hooks the chart runs. The others narrow it or
// only change how long berth waits (Wait, WaitForJobs, Ordered), what it keeps of its own
// history (KeepHistory) or how the API server deletes the release's own objects (Cascade); they
// are taken from the journal, so that the resumption goes on as its operation began.
type Grants struct {
	// TakeOwnership lets the resumption take objects that exist owned by another release or
	// by none (--take-ownership).
	TakeOwnership bool
	// NoHooks are the operations whose hooks the caller skips (--no-hooks, a Release's
	// disableHooks).
	NoHooks []release.Operation
}

// grantsOf are the grants of a caller that takes ownership with take, and skips the hooks of ops
// with noHooks.
func grantsOf(take, noHooks bool, ops ...release.Operation) Grants {
	g := Grants{TakeOwnership: take}
	if noHooks {
		g.NoHooks = ops
	}
	return g
}

// narrow returns jo, of an interrupted op, with what widens it kept only where g grants it too.
func (g Grants) narrow(op release.Operation, jo release.JournalOptions) release.JournalOptions {
	jo.TakeOwnership = jo.TakeOwnership && g.TakeOwnership
	jo.NoHooks = jo.NoHooks && slices.Contains(g.NoHooks, op)
	return jo
}

// JournalRefusedError says the journal of a release was not resumed: it asks for what the
// caller does not grant, or its plan touches objects the release's record does not hold, or it
// disagrees with the record. Nothing was changed by it. It is a Secret anyone who may write
// Secrets in the namespace may write: deleting it lets the release's record alone say what
// was interrupted.
type JournalRefusedError struct {
	Release, Namespace string
	// Operation and Revision are what the journal says.
	Operation release.Operation
	Revision  int
	// Reason says what was refused; Objects, when some, are the objects it names.
	Reason  string
	Objects []resource.Identity
	// Grant is what the caller would have to grant for the journal to be resumed (it skips
	// hooks: NoHooks for its operation, and TakeOwnership when it asks that too); empty when no
	// grant would do (its plan or its revision is refused).
	Grant Grants
}

// Granted says a grant would let the journal be resumed.
func (e *JournalRefusedError) Granted() bool {
	return e.Grant.TakeOwnership || len(e.Grant.NoHooks) > 0
}

func (e *JournalRefusedError) Error() string {
	var objs string
	if len(e.Objects) > 0 {
		ids := make([]string, 0, min(len(e.Objects), 5))
		for _, id := range e.Objects[:min(len(e.Objects), 5)] {
			ids = append(ids, id.String())
		}
		if len(e.Objects) > 5 {
			ids = append(ids, fmt.Sprintf("and %d more", len(e.Objects)-5))
		}
		objs = ": " + strings.Join(ids, ", ")
	}
	return fmt.Sprintf("Secret/%s/%s: the journal of the %s of release %s revision %d is refused: %s%s; nothing was changed by it: delete the Secret if no berth operation wrote it, or grant what it asks",
		e.Namespace, release.JournalKey(e.Release), e.Operation, e.Release, e.Revision, e.Reason, objs)
}

// journalScope is what a journalled plan of a release may name: the objects its record
// holds (own), those it may delete besides (the objects of the revisions it replaces), and
// its hooks.
type journalScope struct {
	own, deletable, hooks map[resource.Identity]bool
	namespace             string
	// hookEvents are the events of the operation for which the record holds hooks.
	hookEvents []resource.HookEvent
}

// scopeOf is the scope of a journalled plan of rel's op: rel's objects and crds, the objects of
// the revisions it replaces (replaced), and rel's hooks.
func scopeOf(c Cluster, op release.Operation, rel *release.Release, objs, replaced []*unstructured.Unstructured) (journalScope, error) {
	s := journalScope{own: idSet(objs), deletable: idSet(replaced), hooks: map[resource.Identity]bool{}, namespace: rel.Namespace}
	for _, event := range []resource.HookEvent{resource.HookPreInstall, resource.HookPostInstall, resource.HookPreUpgrade,
		resource.HookPostUpgrade, resource.HookPreRollback, resource.HookPostRollback, resource.HookPreDelete, resource.HookPostDelete, resource.HookTest} {
		h, err := eventHooks(c, rel, event, false)
		if err != nil {
			return s, err
		}
		for _, hk := range h.hooks {
			s.hooks[hk.Identity] = true
		}
		if len(h.hooks) > 0 && slices.Contains(hookEvents(op), event) {
			s.hookEvents = append(s.hookEvents, event)
		}
	}
	return s, nil
}

func idSet(objs []*unstructured.Unstructured) map[resource.Identity]bool {
	out := make(map[resource.Identity]bool, len(objs))
	for _, obj := range objs {
		out[resource.IdentityOf(obj)] = true
	}
	return out
}

// checkJournal refuses the journal j of an interrupted operation whose resumption would do
// what the record of its revision (scope) and the caller's grants (jo, narrowed) do not allow:
// options the caller does not grant, a plan that names objects outside the scope, that records
// another revision, or that leaves out the hooks of the operation.
func checkJournal(j *release.Journal, s journalScope, jo release.JournalOptions) error {
	refuse := func(reason string, ids ...resource.Identity) *JournalRefusedError {
		return &JournalRefusedError{Release: j.Release, Namespace: s.namespace, Operation: j.Operation, Revision: j.Revision, Reason: reason, Objects: ids}
	}
	// A journal that skips hooks is resumed when the caller skips them too (and takes ownership,
	// when it asks that as well).
	grantable := func(reason string) *JournalRefusedError {
		e := refuse(reason)
		e.Grant = Grants{NoHooks: []release.Operation{j.Operation}, TakeOwnership: j.Options.TakeOwnership && !jo.TakeOwnership}
		return e
	}
	if j.Options.NoHooks && !jo.NoHooks {
		return grantable("it skips the release's hooks, which the caller does not (--no-hooks, or the Release's disableHooks)")
	}
	if j.Plan == nil {
		return nil
	}
	var outside []resource.Identity
	ran := map[string]bool{}
	for _, step := range j.Plan.Steps {
		switch step.Action {
		case plan.Record:
			if step.Revision != 0 && step.Revision != j.Revision {
				return refuse(fmt.Sprintf("its plan records revision %d", step.Revision))
			}
			if slices.ContainsFunc(step.Supersedes, func(v int) bool { return v >= j.Revision || v < 1 }) {
				return refuse(fmt.Sprintf("its plan supersedes revisions %v, not all before it", step.Supersedes))
			}
		case plan.RunHooks:
			ran[step.Hook] = true
		}
		outside = append(outside, s.outside(step)...)
	}
	if len(outside) > 0 {
		return refuse("its plan names objects the release's record does not hold", outside...)
	}
	if !jo.NoHooks {
		for _, event := range s.hookEvents {
			if !ran[string(event)] {
				return grantable(fmt.Sprintf("its plan leaves out the release's %s hooks", event))
			}
		}
	}
	return nil
}

// outside returns the objects of step that its action may not touch in the scope.
func (s journalScope) outside(step plan.Step) []resource.Identity {
	var in func(resource.Identity) bool
	switch step.Action {
	case plan.Apply, plan.Adopt, plan.Validate, plan.WaitReady, plan.Watch:
		in = func(id resource.Identity) bool { return s.own[id] }
	case plan.Delete, plan.WaitAbsent:
		in = func(id resource.Identity) bool { return s.own[id] || s.deletable[id] || s.hooks[id] }
	case plan.RunHooks, plan.RemoveHooks:
		in = func(id resource.Identity) bool { return s.hooks[id] }
	case plan.CreateNamespace, plan.DeleteNamespace:
		in = func(id resource.Identity) bool {
			return id.Group == "" && id.Kind == "Namespace" && id.Name == s.namespace
		}
	default:
		in = func(resource.Identity) bool { return len(step.Objects) == 0 }
	}
	var out []resource.Identity
	for _, id := range step.Objects {
		if !in(id) {
			out = append(out, id)
		}
	}
	return out
}
