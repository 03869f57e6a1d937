package rollouts

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/berthdev/berth/api/v1alpha1"
)

// Setup adds the Rollout controller to mgr. With secrets, it watches the metadata of Secrets
// (a Secret a wave selects appears, or changes its labels), which the manager's cache holds;
// without, it lists them from the API server when a Rollout is reconciled.
func Setup(mgr manager.Manager, secrets bool) error {
	r := &Reconciler{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Now: time.Now}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("rollout").
		For(&v1alpha1.Rollout{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// The Releases it keeps: a change of one moves the rollout on.
		Watches(&v1alpha1.Release{}, handler.EnqueueRequestsFromMapFunc(ownerOf)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2, SkipNameValidation: ptr.To(true)})
	if secrets {
		r.Secrets = mgr.GetClient()
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		b = b.Watches(m, handler.EnqueueRequestsFromMapFunc(selecting(mgr.GetClient())), builder.OnlyMetadata)
	}
	return b.Complete(r)
}

// ownerOf maps a Release to the Rollout that keeps it, by its label.
func ownerOf(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[v1alpha1.RolloutLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}

// selecting maps a Secret to the Rollouts of its namespace whose waves select Secrets.
func selecting(c client.Reader) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list v1alpha1.RolloutList
		if err := c.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "list the Rollouts that may select a Secret", "namespace", obj.GetNamespace())
			return nil
		}
		var out []reconcile.Request
		for _, ro := range list.Items {
			for _, w := range ro.Spec.Waves {
				if w.Selector != nil {
					out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&ro)})
					break
				}
			}
		}
		return out
	}
}
