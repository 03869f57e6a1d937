// Package rollouts is the controller of Rollouts: it keeps one Release per cluster of a
// Rollout's waves, and moves them to the Rollout's template wave by wave as waves.Decide says,
// rolling back (spec.rollbackTo) what it moved when a cluster fails. The Releases do the rest:
// each is released, watched and rolled back by the Release controller, as its account, in its
// cluster.
package rollouts

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller/status"
	"github.com/berthdev/berth/internal/waves"
)

// FieldManager is the field manager of what the controller writes of a Rollout's Releases.
const FieldManager = "berth-rollout"

// lookAgain is how often a Rollout that waits is looked at, beside the changes of its Releases:
// a Release that waits for its cluster past its timeout fails only when looked at.
const lookAgain = 30 * time.Second

// maxMessage bounds a message the status repeats from a Release: with MaxClusters of them, the
// status stays well within what the API server stores.
const maxMessage = 512

// Reconciler moves the Releases of Rollouts wave by wave.
type Reconciler struct {
	// Client reads Rollouts and Releases (from the cache) and writes them.
	Client client.Client
	// Secrets lists the metadata of the kubeconfig Secrets a wave selects.
	Secrets client.Reader
	// Now is the clock.
	Now func() time.Time
}

// Reconcile moves the Rollout req names as waves.Decide says, and writes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var ro v1alpha1.Rollout
	if err := r.Client.Get(ctx, req.NamespacedName, &ro); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ro.DeletionTimestamp != nil {
		// Its Releases go with it: they are owned by it, and each uninstalls its release.
		return ctrl.Result{}, nil
	}
	orig := ro.DeepCopy()
	now := r.Now()
	p, err := resolve(ctx, &ro, r.Secrets)
	if spec := new(SpecError); errors.As(err, &spec) {
		setCondition(&ro, conditionProgressing, metav1.ConditionFalse, reasonInvalidSpec, spec.Error())
		setCondition(&ro, conditionReady, metav1.ConditionFalse, reasonInvalidSpec, spec.Error())
		ro.Status.ObservedGeneration = ro.Generation
		return ctrl.Result{}, r.patchStatus(ctx, orig, &ro)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	var list v1alpha1.ReleaseList
	if err := r.Client.List(ctx, &list, client.InNamespace(ro.Namespace), client.MatchingLabels{v1alpha1.RolloutLabel: ro.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list the Releases of Rollout %s/%s: %w", ro.Namespace, ro.Name, err)
	}
	releases := map[string]*v1alpha1.Release{}
	for i := range list.Items {
		releases[list.Items[i].Name] = &list.Items[i]
	}

	in := r.inputOf(&ro, p, releases, now)
	plan := waves.Decide(in)
	// The status is written before anything is moved: it keeps the revision each cluster had
	// before, which a rollback returns to.
	ro.Status = statusOf(&ro, p, in, plan, now)
	if err := r.patchStatus(ctx, orig, &ro); err != nil {
		return ctrl.Result{}, err
	}
	for _, ref := range plan.Move {
		if err := r.apply(ctx, &ro, p.waves[ref.Wave][ref.Cluster], p.target, nil); err != nil {
			return ctrl.Result{}, err
		}
	}
	for _, ref := range plan.RollBack {
		c := in.Waves[ref.Wave].Clusters[ref.Cluster]
		req := &v1alpha1.RollbackRequest{Revision: c.PreviousRevision, Reason: rollbackReason(&ro, plan.Failure)}
		if err := r.apply(ctx, &ro, p.waves[ref.Wave][ref.Cluster], p.target, req); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.dropStray(ctx, p, releases); err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case plan.After > 0:
		return ctrl.Result{RequeueAfter: min(plan.After, lookAgain)}, nil
	case plan.Complete || (plan.Failure != nil && (plan.RolledBack || ro.Spec.Remediation == v1alpha1.RemediationHalt)):
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: lookAgain}, nil
}

// inputOf is what waves.Decide decides from: the plan p of ro, what the Releases say, and what
// ro's status kept (the revisions before the move, the failure it halted for).
func (r *Reconciler) inputOf(ro *v1alpha1.Rollout, p *plan, releases map[string]*v1alpha1.Release, now time.Time) waves.Input {
	in := waves.Input{
		Target: p.target, Approved: ro.Annotations[v1alpha1.ApprovedAnnotation], Paused: ro.Spec.Paused,
		Remediation: waves.Rollback, Timeout: defaultTimeout, Now: now,
	}
	if ro.Spec.Remediation == v1alpha1.RemediationHalt {
		in.Remediation = waves.Halt
	}
	if t := ro.Spec.Template.Spec.Timeout; t != nil && t.Duration > 0 {
		in.Timeout = t.Duration
	}
	kept := map[string]v1alpha1.ClusterStatus{}
	if ro.Status.Target == p.target {
		for _, w := range ro.Status.Waves {
			for _, c := range w.Clusters {
				kept[c.Name] = c
			}
		}
	}
	for w, members := range p.waves {
		spec := ro.Spec.Waves[w]
		wave := waves.Wave{Name: spec.Name, MaxParallel: int(spec.MaxParallel), Approval: spec.Approval}
		if spec.Pause != nil {
			wave.Pause = spec.Pause.Duration
		}
		for i, m := range members {
			wave.Clusters = append(wave.Clusters, waves.Cluster{Name: m.name, Observed: observe(releases[m.release]), PreviousRevision: kept[m.name].PreviousRevision})
			if f := ro.Status.Failure; f != nil && ro.Status.Target == p.target && f.Wave == spec.Name && f.Cluster == m.name {
				in.Failure = &waves.Failure{Ref: waves.Ref{Wave: w, Cluster: i}, Reason: f.Reason, Message: f.Message}
			}
		}
		in.Waves = append(in.Waves, wave)
	}
	return in
}

// observe is what rel (nil when there is none) says to waves.Decide.
func observe(rel *v1alpha1.Release) waves.Observed {
	if rel == nil {
		return waves.Observed{}
	}
	o := waves.Observed{
		Exists: true, Target: rel.Labels[v1alpha1.RolloutTargetLabel], Revision: rel.Status.Revision,
		Reconciling: meta.IsStatusConditionTrue(rel.Status.Conditions, "Reconciling"),
	}
	if rel.Spec.RollbackTo != nil {
		o.RollbackTo = rel.Spec.RollbackTo.Revision
	}
	if ready := meta.FindStatusCondition(rel.Status.Conditions, "Ready"); ready != nil {
		o.Current = rel.Status.ObservedGeneration == rel.Generation && ready.ObservedGeneration == rel.Generation
		o.Ready = ready.Status == metav1.ConditionTrue
		o.Reason, o.Message, o.Since = ready.Reason, ready.Message, ready.LastTransitionTime.Time
	}
	return o
}

// apply writes the Release of cluster m for target, with req (a rollback) when given: its spec,
// the rollout's labels and its owner, by server-side apply.
func (r *Reconciler) apply(ctx context.Context, ro *v1alpha1.Rollout, m member, target string, req *v1alpha1.RollbackRequest) error {
	rel := &v1alpha1.Release{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Release"},
		ObjectMeta: metav1.ObjectMeta{
			Name: m.release, Namespace: ro.Namespace, Labels: releaseLabels(ro, m.name, target),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "Rollout", Name: ro.Name, UID: ro.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: m.spec,
	}
	rel.Spec.RollbackTo = req
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rel)
	if err != nil {
		return err
	}
	delete(obj, "status")
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	u := &unstructured.Unstructured{Object: obj}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("write Release %s/%s of Rollout %s: %w", ro.Namespace, m.release, ro.Name, err)
	}
	return nil
}

// releaseLabels are the labels of the Release of cluster of ro at target: ro's own (a shard's
// selector picks the Releases of the Rollouts it serves), and the rollout's.
func releaseLabels(ro *v1alpha1.Rollout, cluster, target string) map[string]string {
	l := maps.Clone(ro.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[v1alpha1.RolloutLabel] = ro.Name
	l[v1alpha1.RolloutClusterLabel] = cluster
	l[v1alpha1.RolloutTargetLabel] = target
	return l
}

// dropStray deletes the Releases of the rollout that no wave has any more: each uninstalls its
// release from its cluster.
func (r *Reconciler) dropStray(ctx context.Context, p *plan, releases map[string]*v1alpha1.Release) error {
	wanted := map[string]bool{}
	for _, members := range p.waves {
		for _, m := range members {
			wanted[m.release] = true
		}
	}
	for name, rel := range releases {
		if wanted[name] || rel.DeletionTimestamp != nil {
			continue
		}
		if err := r.Client.Delete(ctx, rel); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete Release %s/%s, whose cluster is in no wave: %w", rel.Namespace, name, err)
		}
	}
	return nil
}

// rollbackReason is the reason of the rollbacks that undo ro after failure f.
func rollbackReason(ro *v1alpha1.Rollout, f *waves.Failure) string {
	msg := fmt.Sprintf("Rollout %s halted", ro.Name)
	if f != nil && f.Wave >= 0 && f.Wave < len(ro.Status.Waves) && f.Cluster >= 0 && f.Cluster < len(ro.Status.Waves[f.Wave].Clusters) {
		msg = fmt.Sprintf("Rollout %s: cluster %s of wave %s %s", ro.Name, ro.Status.Waves[f.Wave].Clusters[f.Cluster].Name, ro.Status.Waves[f.Wave].Name, strings.ToLower(f.Reason))
	}
	return status.CutMessage(msg, 200)
}

// patchStatus writes ro's status if it changed from orig's.
func (r *Reconciler) patchStatus(ctx context.Context, orig, ro *v1alpha1.Rollout) error {
	if equalStatus(orig.Status, ro.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, ro, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("write the status of Rollout %s/%s: %w", ro.Namespace, ro.Name, err)
	}
	return nil
}
