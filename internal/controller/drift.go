package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/diff"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/sequence"
)

// ConditionDrifted says whether the release's objects in the cluster differ from the deployed
// revision's; it is present only while spec.drift.mode is detect or correct.
const ConditionDrifted = "Drifted"

const (
	ReasonNoDrift               = "NoDrift"
	ReasonDriftDetected         = "DriftDetected"
	ReasonDriftCorrected        = "DriftCorrected"
	ReasonDriftCorrectionFailed = "DriftCorrectionFailed"
	ReasonDriftCheckFailed      = "DriftCheckFailed"
)

// driftRules is spec.drift, checked.
type driftRules struct {
	Mode   v1alpha1.DriftMode
	Ignore []ignoreRule
}

// ignoreRule is a spec.drift.ignore entry with its pointers split into tokens.
type ignoreRule struct {
	Kind, Name string
	Paths      [][]string
}

// driftOf checks spec.drift.
func driftOf(s *v1alpha1.DriftSpec) (driftRules, error) {
	if s == nil {
		return driftRules{Mode: v1alpha1.DriftDisabled}, nil
	}
	r := driftRules{Mode: s.Mode}
	switch s.Mode {
	case "":
		r.Mode = v1alpha1.DriftDisabled
	case v1alpha1.DriftDisabled, v1alpha1.DriftDetect, v1alpha1.DriftCorrect:
	default:
		return r, invalid("drift.mode", "%q is none of disabled, detect and correct", s.Mode)
	}
	for i, ig := range s.Ignore {
		if len(ig.Paths) == 0 {
			return r, invalid(fmt.Sprintf("drift.ignore[%d].paths", i), "is empty: give the JSON pointers of the fields that may differ, like /spec/replicas")
		}
		rule := ignoreRule{Kind: ig.Kind, Name: ig.Name}
		for j, p := range ig.Paths {
			tokens, ok := pointerTokens(p)
			if !ok || len(tokens) == 0 {
				return r, invalid(fmt.Sprintf("drift.ignore[%d].paths[%d]", i, j), "%q is not a JSON pointer to a field: write /spec/replicas, with ~1 for a / inside a name (/metadata/labels/app.kubernetes.io~1version)", p)
			}
			rule.Paths = append(rule.Paths, tokens)
		}
		r.Ignore = append(r.Ignore, rule)
	}
	return r, nil
}

// ignored are the paths of the rules that apply to the object id.
func (r driftRules) ignored(id resource.Identity) [][]string {
	var out [][]string
	for _, rule := range r.Ignore {
		if (rule.Kind == "" || rule.Kind == id.Kind) && (rule.Name == "" || rule.Name == id.Name) {
			out = append(out, rule.Paths...)
		}
	}
	return out
}

// drifted is an object of the release that is not as its revision recorded it.
type drifted struct {
	ID resource.Identity
	// Missing: the object is gone.
	Missing bool
	// Fields are the JSON pointers of the fields that re-applying the object would change.
	Fields []string
	// Desired is what is applied to put the object back: the recorded object, with the fields
	// the ignore rules name as they are live.
	Desired *unstructured.Unstructured
}

// driftCluster is what drift detection and correction need of the cluster.
type driftCluster interface {
	Normalize(obj *unstructured.Unstructured, defaultNamespace string) error
	GetVersion(ctx context.Context, id resource.Identity, version string) (*unstructured.Unstructured, error)
	Apply(ctx context.Context, obj *unstructured.Unstructured, opts cluster.ApplyOptions) (*unstructured.Unstructured, error)
}

// findDrift compares the objects rel records with the live ones, on the fields berth applies.
// An object whose recorded fields all have their recorded values live is as recorded, without
// further ado (no request beyond reading it). Otherwise the API server's dry run of berth's apply
// of the recorded object says what re-applying it would change: nothing when the difference is
// only in how the API server writes a value (0.5 for 500m, defaults, stringData), the fields
// otherwise. Objects whose kind is no longer served are left out.
// Each live object read, or found missing, is given to seen, when not nil, for the Healthy
// condition; with rules of mode disabled, the objects are only read, for seen, and none is found
// drifted.
func findDrift(ctx context.Context, c driftCluster, rel *release.Release, rules driftRules, seen func(resource.Identity, *unstructured.Unstructured)) ([]drifted, error) {
	objs, err := resource.ParseManifest(rel.Manifest)
	if err != nil {
		return nil, fmt.Errorf("release %s revision %d: recorded manifest: %w", rel.Name, rel.Version, err)
	}
	var out []drifted
	var errs []error
	for _, obj := range objs {
		d, err := driftOfObject(ctx, c, rel, obj, rules, seen)
		if err != nil {
			errs = append(errs, err)
		}
		if d != nil {
			out = append(out, *d)
		}
	}
	return out, errors.Join(errs...)
}

// driftOfObject compares one recorded object with its live self, which it gives to seen when
// not nil; nil when it is as recorded, or when rules' mode is disabled (it is then only read).
func driftOfObject(ctx context.Context, c driftCluster, rel *release.Release, obj *unstructured.Unstructured, rules driftRules, seen func(resource.Identity, *unstructured.Unstructured)) (*drifted, error) {
	err := c.Normalize(obj, rel.Namespace)
	if cluster.IsUnknownKind(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", resource.IdentityOf(obj), err)
	}
	resource.SetOwnership(obj, rel.Name, rel.Namespace)
	sequence.Strip(obj) // as applied: without the annotation key the API server refuses
	id := resource.IdentityOf(obj)
	live, err := c.GetVersion(ctx, id, obj.GroupVersionKind().Version)
	if cluster.IsUnknownKind(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if seen != nil {
		seen(id, live)
	}
	if rules.Mode == v1alpha1.DriftDisabled {
		return nil, nil
	}
	if live == nil {
		return &drifted{ID: id, Missing: true, Desired: obj}, nil
	}
	for _, tokens := range rules.ignored(id) {
		overlay(obj.Object, live.Object, tokens)
	}
	if covers(obj.Object, live.Object) {
		return nil, nil
	}
	applied, err := c.Apply(ctx, obj.DeepCopy(), cluster.ApplyOptions{DryRun: true})
	if err != nil {
		return nil, err
	}
	fields := diffPaths(diff.Clean(live), diff.Clean(applied), nil, nil)
	if len(fields) == 0 {
		return nil, nil
	}
	return &drifted{ID: id, Fields: fields, Desired: obj}, nil
}

// checkDrift compares the deployed revision's objects with the live ones, as the Release's
// ServiceAccount, and says so in the Drifted condition; in correct mode it applies the drifted
// objects again, without a new revision, holding the release's lease (correctReleaseDrift).
// Detection writes nothing to the cluster but the status and an event when what drifted changes:
// the comparison reads the objects, and asks the API server for a dry run of an apply only for an
// object whose recorded fields differ live; it takes no lease. The objects it reads also say
// whether the release is healthy (the Healthy condition, reportHealth), with no request of its
// own. Disabled, it reads nothing, unless the Release has a watch window: it then reads the
// objects for the Healthy condition alone.
func (r *Reconciler) checkDrift(ctx context.Context, rel *v1alpha1.Release, d *desired, clients *kube.Clients) {
	tally := newHealthTally(d)
	if d.Drift.Mode == v1alpha1.DriftDisabled {
		meta.RemoveStatusCondition(&rel.Status.Conditions, ConditionDrifted)
		if tally == nil {
			meta.RemoveStatusCondition(&rel.Status.Conditions, ConditionHealthy)
			return
		}
	}
	c := cluster.New(clients.Dynamic, clients.Mapper)
	found, revision, err := r.findReleaseDrift(ctx, c, clients, d, tally.see)
	if d.Drift.Mode == v1alpha1.DriftDisabled {
		r.reportHealth(ctx, rel, tally, revision, err)
		return
	}
	if err != nil {
		r.reportHealth(ctx, rel, tally, revision, err)
		setCondition(rel, ConditionDrifted, metav1.ConditionUnknown, ReasonDriftCheckFailed, errorLine(err))
		return
	}
	prev := meta.FindStatusCondition(rel.Status.Conditions, ConditionDrifted)
	if len(found) == 0 || d.Drift.Mode == v1alpha1.DriftDetect {
		r.reportHealth(ctx, rel, tally, revision, nil)
	}
	if len(found) == 0 {
		// A correction stays the last word until something drifts again.
		if prev == nil || prev.Status != metav1.ConditionFalse || prev.ObservedGeneration != rel.Generation {
			setCondition(rel, ConditionDrifted, metav1.ConditionFalse, ReasonNoDrift,
				fmt.Sprintf("the objects of release %s are as revision %d records them", d.ReleaseName, revision))
		}
		return
	}
	what := driftMessage(found)
	if d.Drift.Mode == v1alpha1.DriftDetect {
		msg := fmt.Sprintf("%d object(s) differ from revision %d: %s", len(found), revision, what)
		if prev == nil || prev.Status != metav1.ConditionTrue || prev.Message != msg {
			r.event(ctx, rel, corev1.EventTypeWarning, ReasonDriftDetected, "drift", msg)
		}
		setCondition(rel, ConditionDrifted, metav1.ConditionTrue, ReasonDriftDetected, msg)
		return
	}
	r.correct(ctx, rel, c, clients, d, found, revision, tally)
}

// checkHealth reads the objects of the release's last revision for the Healthy condition alone,
// when it is reported (healthReported), without comparing them with the record: the check of a
// Release whose failed attempt stands, which does not correct drift.
func (r *Reconciler) checkHealth(ctx context.Context, rel *v1alpha1.Release, d *desired, clients *kube.Clients) {
	tally := newHealthTally(d)
	if tally == nil {
		meta.RemoveStatusCondition(&rel.Status.Conditions, ConditionHealthy)
		return
	}
	readOnly := *d
	readOnly.Drift = driftRules{Mode: v1alpha1.DriftDisabled}
	_, revision, err := r.findReleaseDrift(ctx, cluster.New(clients.Dynamic, clients.Mapper), clients, &readOnly, tally.see)
	r.reportHealth(ctx, rel, tally, revision, err)
}

// correct puts the drifted objects found in revision back (correctReleaseDrift), and says how that
// went in the Drifted condition and an event, and what tally found in the Healthy condition:
// without the objects found missing and put back.
func (r *Reconciler) correct(ctx context.Context, rel *v1alpha1.Release, c driftCluster, clients *kube.Clients, d *desired, found []drifted, revision int, tally *healthTally) {
	corrected, at, err := r.correctReleaseDrift(ctx, c, clients, d)
	if err == nil {
		ids := make([]resource.Identity, len(corrected))
		for i, o := range corrected {
			ids[i] = o.ID
		}
		tally.forget(ids)
	}
	r.reportHealth(ctx, rel, tally, revision, nil)
	switch {
	case err != nil:
		msg := fmt.Sprintf("%d object(s) differ from revision %d: %s; correcting them failed: %s", len(found), revision, driftMessage(found), errorLine(err))
		r.event(ctx, rel, corev1.EventTypeWarning, ReasonDriftCorrectionFailed, "drift", msg)
		setCondition(rel, ConditionDrifted, metav1.ConditionTrue, ReasonDriftCorrectionFailed, msg)
	case len(corrected) == 0:
		// An operation put the objects back meanwhile.
		setCondition(rel, ConditionDrifted, metav1.ConditionFalse, ReasonNoDrift,
			fmt.Sprintf("the objects of release %s are as revision %d records them", d.ReleaseName, at))
	default:
		msg := fmt.Sprintf("put %d object(s) back as revision %d records them: %s", len(corrected), at, driftMessage(corrected))
		r.event(ctx, rel, corev1.EventTypeNormal, ReasonDriftCorrected, "drift", msg)
		setCondition(rel, ConditionDrifted, metav1.ConditionFalse, ReasonDriftCorrected, msg)
	}
}

// findReleaseDrift reads the release's last record and compares its objects with the live ones.
func (r *Reconciler) findReleaseDrift(ctx context.Context, c driftCluster, clients *kube.Clients, d *desired, seen func(resource.Identity, *unstructured.Unstructured)) ([]drifted, int, error) {
	store, err := r.store(clients)
	if err != nil {
		return nil, 0, err
	}
	last, err := store.Last(ctx, d.ReleaseName)
	if err != nil {
		return nil, 0, fmt.Errorf("read the records of release %s in namespace %s: %w", d.ReleaseName, clients.Namespace, err)
	}
	found, err := findDrift(ctx, c, last, d.Drift, seen)
	return found, last.Version, err
}

// correctReleaseDrift puts the release's drifted objects back as an operation of the lifecycle
// (lifecycle.CorrectDrift): holding the release's lease (berth's CLI, or this controller's own
// operations, may be changing the release), it finds the drift again under the lease, from the
// release's last record, which must be deployed (an operation that did not finish is finished
// first, by the next upgrade or recover), and applies the drifted objects through the engine as
// a journalled plan. It returns what it put back, none when nothing has drifted any more.
func (r *Reconciler) correctReleaseDrift(ctx context.Context, c driftCluster, clients *kube.Clients, d *desired) (corrected []drifted, revision int, err error) {
	deps, err := r.depsFor(d, clients, nil)
	if err != nil {
		return nil, 0, err
	}
	res, err := lifecycle.CorrectDrift(ctx, deps, lifecycle.CorrectOptions{
		Name: d.ReleaseName, WaitOptions: lifecycle.WaitOptions{Timeout: d.Timeout},
		Find: func(ctx context.Context, last *release.Release) ([]*unstructured.Unstructured, error) {
			found, err := findDrift(ctx, c, last, d.Drift, nil)
			if err != nil {
				return nil, err
			}
			corrected = found
			objs := make([]*unstructured.Unstructured, len(found))
			for i, f := range found {
				objs[i] = f.Desired.DeepCopy()
			}
			return objs, nil
		},
	})
	if res != nil {
		revision = res.Revision
	}
	if res == nil || len(res.Corrected) == 0 {
		corrected = nil
	}
	return corrected, revision, err
}

// Bounds of the drift message: objects named, fields named per object, characters in all.
const (
	driftObjectsShown = 10
	driftFieldsShown  = 5
	maxDriftMessage   = 2000
)

// driftMessage names the drifted objects and their fields, within bounds.
func driftMessage(found []drifted) string {
	parts := make([]string, len(found))
	for i, d := range found {
		if d.Missing {
			parts[i] = d.ID.String() + " is missing"
			continue
		}
		parts[i] = d.ID.String() + " " + joinBounded(d.Fields, driftFieldsShown)
	}
	msg := strings.Join(parts[:min(len(parts), driftObjectsShown)], "; ")
	if len(parts) > driftObjectsShown {
		msg += fmt.Sprintf("; and %d more object(s)", len(parts)-driftObjectsShown)
	}
	return cut(msg, maxDriftMessage)
}

// joinBounded joins the first n items with commas and counts the others.
func joinBounded(items []string, n int) string {
	s := strings.Join(items[:min(len(items), n)], ", ")
	if len(items) > n {
		s += fmt.Sprintf(" and %d more", len(items)-n)
	}
	return s
}

// cut cuts s to at most n bytes, ending it with "..." when it is cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	end := n - len("...")
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + "..."
}
