package resource

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Helm's hook annotations.
const (
	HookAnnotation          = "helm.sh/hook"
	HookWeightAnnotation    = "helm.sh/hook-weight"
	HookDeleteAnnotation    = "helm.sh/hook-delete-policy"
	HookOutputLogAnnotation = "helm.sh/hook-output-log-policy"
)

// HookEvent is a point in a release's lifecycle at which a hook runs.
type HookEvent string

// The hook events Helm knows.
const (
	HookPreInstall   HookEvent = "pre-install"
	HookPostInstall  HookEvent = "post-install"
	HookPreDelete    HookEvent = "pre-delete"
	HookPostDelete   HookEvent = "post-delete"
	HookPreUpgrade   HookEvent = "pre-upgrade"
	HookPostUpgrade  HookEvent = "post-upgrade"
	HookPreRollback  HookEvent = "pre-rollback"
	HookPostRollback HookEvent = "post-rollback"
	HookTest         HookEvent = "test"
)

// hookEventAliases maps every spelling Helm accepts to its event; test-success is Helm 2's name
// for test.
var hookEventAliases = map[string]HookEvent{
	"pre-install":   HookPreInstall,
	"post-install":  HookPostInstall,
	"pre-delete":    HookPreDelete,
	"post-delete":   HookPostDelete,
	"pre-upgrade":   HookPreUpgrade,
	"post-upgrade":  HookPostUpgrade,
	"pre-rollback":  HookPreRollback,
	"post-rollback": HookPostRollback,
	"test":          HookTest,
	"test-success":  HookTest,
}

// DeletePolicy says when a hook's object is deleted.
type DeletePolicy string

// The delete policies Helm knows.
const (
	BeforeHookCreation DeletePolicy = "before-hook-creation"
	HookSucceeded      DeletePolicy = "hook-succeeded"
	HookFailed         DeletePolicy = "hook-failed"
)

// OutputLogPolicy says when the logs of a hook's Pods are shown.
type OutputLogPolicy string

// The output log policies Helm knows.
const (
	OutputOnSucceeded OutputLogPolicy = "hook-succeeded"
	OutputOnFailed    OutputLogPolicy = "hook-failed"
)

// Hook is an object that runs at lifecycle events instead of being part of the release's resources.
type Hook struct {
	Identity Identity
	// Events are the events the hook runs on, in annotation order.
	Events []HookEvent
	// Weight orders hooks of one event: lower first (Helm breaks ties by name).
	Weight int
	// DeletePolicies is never empty: like Helm, a hook without the annotation gets
	// before-hook-creation.
	DeletePolicies    []DeletePolicy
	OutputLogPolicies []OutputLogPolicy
	Object            *unstructured.Unstructured
}

// Has reports whether the hook runs on event.
func (h Hook) Has(event HookEvent) bool { return slices.Contains(h.Events, event) }

// HasDeletePolicy reports whether the hook has policy p.
func (h Hook) HasDeletePolicy(p DeletePolicy) bool { return slices.Contains(h.DeletePolicies, p) }

// ParseHook reads Helm's hook annotations on obj. It returns ok=false when obj is not a hook (has
// no helm.sh/hook annotation). Values are trimmed and lowercased as Helm does; an unknown event or
// policy, or a weight that is not an integer, is an error naming the object.
func ParseHook(obj *unstructured.Unstructured) (Hook, bool, error) {
	annotations := obj.GetAnnotations()
	events, ok := annotations[HookAnnotation]
	if !ok {
		return Hook{}, false, nil
	}
	id := IdentityOf(obj)
	h := Hook{Identity: id, Object: obj}
	for _, v := range splitList(events) {
		e, ok := hookEventAliases[v]
		if !ok {
			return Hook{}, true, fmt.Errorf("%s: %s: unknown hook event %q", id, HookAnnotation, v)
		}
		h.Events = append(h.Events, e)
	}
	if len(h.Events) == 0 {
		return Hook{}, true, fmt.Errorf("%s: %s: no hook event", id, HookAnnotation)
	}
	if w := strings.TrimSpace(annotations[HookWeightAnnotation]); w != "" {
		weight, err := strconv.Atoi(w)
		if err != nil {
			return Hook{}, true, fmt.Errorf("%s: %s: %q is not an integer", id, HookWeightAnnotation, w)
		}
		h.Weight = weight
	}
	for _, v := range splitList(annotations[HookDeleteAnnotation]) {
		p := DeletePolicy(v)
		if p != BeforeHookCreation && p != HookSucceeded && p != HookFailed {
			return Hook{}, true, fmt.Errorf("%s: %s: unknown delete policy %q", id, HookDeleteAnnotation, v)
		}
		h.DeletePolicies = append(h.DeletePolicies, p)
	}
	if len(h.DeletePolicies) == 0 {
		h.DeletePolicies = []DeletePolicy{BeforeHookCreation}
	}
	for _, v := range splitList(annotations[HookOutputLogAnnotation]) {
		p := OutputLogPolicy(v)
		if p != OutputOnSucceeded && p != OutputOnFailed {
			return Hook{}, true, fmt.Errorf("%s: %s: unknown output log policy %q", id, HookOutputLogAnnotation, v)
		}
		h.OutputLogPolicies = append(h.OutputLogPolicies, p)
	}
	return h, true, nil
}

// HooksFor returns the hooks that run on event in the order Helm runs them: by weight, then by
// name, keeping the given (kind) order for equal weight and name.
func HooksFor(hooks []Hook, event HookEvent) []Hook {
	var out []Hook
	for _, h := range hooks {
		if h.Has(event) {
			out = append(out, h)
		}
	}
	slices.SortStableFunc(out, func(a, b Hook) int {
		if a.Weight != b.Weight {
			return cmp.Compare(a.Weight, b.Weight)
		}
		return cmp.Compare(a.Identity.Name, b.Identity.Name)
	})
	return out
}

// splitList splits a comma-separated annotation value, trimming and lowercasing each element and
// dropping empty ones.
func splitList(s string) []string {
	var out []string
	for v := range strings.SplitSeq(s, ",") {
		v = strings.ToLower(strings.TrimSpace(v))
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
