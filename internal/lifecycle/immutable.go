package lifecycle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/resource"
)

// ImmutableFieldError says the API server refuses to change Fields of a live object, fields that
// can only be set when it is created (a Deployment's spec.selector, a Service's spec.clusterIP,
// a Job's spec.template): only deleting the object and creating it again changes them. Nothing
// was changed. Err is the API server's refusal.
type ImmutableFieldError struct {
	ID     resource.Identity
	Fields []string
	Err    error
}

func (e *ImmutableFieldError) Error() string {
	what := "field " + e.Fields[0] + " is"
	if len(e.Fields) > 1 {
		what = "fields " + strings.Join(e.Fields, ", ") + " are"
	}
	return fmt.Sprintf("%s: the API server refuses the change: %s immutable once the object exists", e.ID, what)
}

func (e *ImmutableFieldError) Unwrap() error { return e.Err }

// immutableMarks are what the API server's causes say of a field that cannot change once set.
var immutableMarks = []string{
	"field is immutable",
	"may not change once set",
	"updates to statefulset spec for fields other than", // StatefulSet: only a few fields may change
}

// immutableFields returns the fields the API server's refusal err says cannot change, when every
// cause it gives is such a field; nil for any other error.
func immutableFields(err error) []string {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return nil
	}
	st := status.Status()
	if st.Reason != metav1.StatusReasonInvalid || st.Details == nil || len(st.Details.Causes) == 0 {
		return nil
	}
	var fields []string
	for _, c := range st.Details.Causes {
		if !slices.ContainsFunc(immutableMarks, func(m string) bool { return strings.Contains(c.Message, m) }) {
			return nil
		}
		if f := c.Field; f != "" && !slices.Contains(fields, f) {
			fields = append(fields, f)
		}
	}
	if len(fields) == 0 {
		fields = []string{"(unnamed)"}
	}
	return fields
}

// surveyOptions say what a survey checks beyond the dry run of every object.
type surveyOptions struct {
	// replaceCRDs updates the existing CRDs of crds/ too (CRDsCreateReplace).
	replaceCRDs bool
	// forceReplace replaces the objects whose changes the API server refuses as immutable.
	forceReplace bool
	// readAll reads every object before the dry runs: those of a revision recorded already (an
	// interrupted operation being finished) are likely there.
	readAll bool
}

// settleImmutable decides what becomes of the objects whose changes the dry run refused as
// immutable (refused): with forceReplace, they are replaced, once validated as such
// (validateReplacements); otherwise their refusals join the survey's validation error. It reads
// the live objects from the records (p.facts), and writes there what the dry runs of the
// replacements returned (plan.Object.Applied).
func (s *survey) settleImmutable(ctx context.Context, c Cluster, p *prepared, refused map[resource.Identity]*ImmutableFieldError, forceReplace bool) {
	if len(refused) == 0 {
		return
	}
	ids := slices.SortedFunc(maps.Keys(refused), resource.Compare)
	if !forceReplace {
		errs := make([]error, len(ids))
		for i, id := range ids {
			errs[i] = refused[id]
		}
		s.validationErr = joinValidation(s.validationErr, errors.Join(errs...))
		return
	}
	if s.validationErr != nil {
		return // the operation stops anyway; replacing would not help
	}
	applied, err := validateReplacements(ctx, c, p, refused, ids)
	if err != nil {
		s.validationErr = joinValidation(s.validationErr, err)
		return
	}
	for id, a := range applied {
		p.facts.At(id).Applied = a
	}
	s.replaced = ids
}

// validateReplacements checks, with server-side dry runs, that each object of ids, whose change
// the API server refused as immutable, can be replaced: deleted by the UID it has (live) and
// created again. As the object still exists under its name, its creation is dry-run under a name
// of its own (replacementName). It returns what that dry run returned, named as the object. A
// CustomResourceDefinition is never replaced: deleting it deletes every object of its kinds.
func validateReplacements(ctx context.Context, c Cluster, p *prepared, refused map[resource.Identity]*ImmutableFieldError,
	ids []resource.Identity) (map[resource.Identity]*unstructured.Unstructured, error) {
	objs := make([]*unstructured.Unstructured, 0, len(ids))
	for _, id := range ids {
		objs = append(objs, p.facts.Get(id).Desired)
	}
	applied := map[resource.Identity]*unstructured.Unstructured{}
	var mu sync.Mutex
	err := forEach(ctx, objs, func(ctx context.Context, obj *unstructured.Unstructured) error {
		id := resource.IdentityOf(obj)
		l := p.facts.LiveOf(id)
		if id.IsCRD() || l == nil || l.GetUID() == "" {
			return refused[id]
		}
		if _, err := c.Delete(ctx, id, l.GetUID(), cluster.DeleteOptions{DryRun: true}); err != nil {
			return &ReplacementError{ID: id, Delete: true, Err: err}
		}
		tmp := obj.DeepCopy()
		tmp.SetName(replacementName(id, l.GetUID()))
		out, err := c.Apply(ctx, tmp, cluster.ApplyOptions{DryRun: true})
		if err != nil {
			return &ReplacementError{ID: id, Name: tmp.GetName(), Err: err}
		}
		out.SetName(obj.GetName())
		mu.Lock()
		applied[id] = out
		mu.Unlock()
		return nil
	})
	return applied, err
}

// ReplacementError says the API server refuses to replace an object whose immutable fields
// change: to delete it (Delete), or to create it (dry-run under the name Name, as it still
// exists under its own).
type ReplacementError struct {
	ID     resource.Identity
	Delete bool
	Name   string
	Err    error
}

func (e *ReplacementError) Error() string {
	if e.Delete {
		return fmt.Sprintf("%s: cannot be replaced: its deletion is refused: %v", e.ID, e.Err)
	}
	return fmt.Sprintf("%s: cannot be replaced: its creation is refused (dry run as %s): %v", e.ID, e.Name, e.Err)
}

func (e *ReplacementError) Unwrap() error { return e.Err }

// replacementName is the name the creation of a replaced object is dry-run under: its own is
// taken until it is deleted. It is a valid name of any kind that names its objects freely.
func replacementName(id resource.Identity, uid types.UID) string {
	sum := sha256.Sum256([]byte(id.String() + "/" + string(uid)))
	return "berth-replace-" + hex.EncodeToString(sum[:5])
}

// joinValidation adds more to the validation error err (either may be nil), as one
// *ValidationError: nothing was changed.
func joinValidation(err, more error) error {
	if more == nil {
		return err
	}
	var ve *ValidationError
	if errors.As(err, &ve) && !ve.Late {
		return &ValidationError{Err: errors.Join(ve.Err, more)}
	}
	return &ValidationError{Err: errors.Join(err, more)}
}
