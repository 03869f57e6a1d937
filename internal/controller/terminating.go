package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/lifecycle"
)

// ReasonNamespaceTerminating: the Release's namespace is being deleted, and the uninstall went on
// without what could no longer be done there (hooks that could not be created, or the whole
// uninstall once the Release's ServiceAccount lost its rights with the namespace).
const ReasonNamespaceTerminating = "NamespaceTerminating"

// reportSkippedHooks says, in rel's status and an Event, which hooks the uninstall skipped
// because their namespace is being deleted. The Event may be refused for the same reason; the
// status is written before the Release goes.
func (r *Reconciler) reportSkippedHooks(ctx context.Context, orig, rel *v1alpha1.Release, d *desired, skipped []lifecycle.SkippedHook) {
	names := make([]string, 0, len(skipped))
	for _, h := range skipped {
		names = append(names, fmt.Sprintf("%s hook %s", h.Event, h.Hook))
	}
	msg := fmt.Sprintf("release %s uninstalled without hooks that could not be created, as namespace %s is being deleted: %s",
		d.ReleaseName, d.TargetNamespace, strings.Join(names, ", "))
	setCondition(rel, ConditionReady, metav1.ConditionFalse, ReasonNamespaceTerminating, msg)
	rel.Status.Blockers = nil
	for _, h := range skipped {
		rel.Status.Blockers = append(rel.Status.Blockers, v1alpha1.Blocker{
			Kind: "hook", Object: h.Hook.String(), Message: fmt.Sprintf("%s hook skipped: %s", h.Event, firstLine(h.Reason)),
		})
	}
	r.event(ctx, rel, corev1.EventTypeWarning, ReasonNamespaceTerminating, "uninstall", msg)
	if err := r.patchStatus(ctx, orig, rel); err != nil {
		log.FromContext(ctx).Error(err, "report the hooks skipped")
	}
}

// accountGone says whether the uninstall failed because the Release's ServiceAccount lost its
// rights (or its existence) with the deletion of the Release's namespace: then nothing can act
// for the release any more, and the namespace's deletion removes what the release has in it.
func (r *Reconciler) accountGone(ctx context.Context, rel *v1alpha1.Release, err error) bool {
	if !isForbidden(err) && !errors.As(err, new(*AccountNotFoundError)) || lifecycle.NamespaceTerminating(err) {
		return false
	}
	return r.namespaceGoing(ctx, rel)
}

// namespaceGoing says rel's namespace is gone or being deleted, reading it with the controller's
// own rights.
func (r *Reconciler) namespaceGoing(ctx context.Context, rel *v1alpha1.Release) bool {
	cs, cerr := kubernetes.NewForConfig(r.Config)
	if cerr != nil {
		return false
	}
	ns, nerr := cs.CoreV1().Namespaces().Get(ctx, rel.Namespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(nerr):
		return true
	case nerr != nil:
		log.FromContext(ctx).Error(nerr, "read the Release's namespace", "namespace", rel.Namespace)
		return false
	}
	return !ns.DeletionTimestamp.IsZero()
}

// letGo records that the uninstall of a Release whose namespace is being deleted could not be
// run (err), and lets the Release go: the namespace's deletion removes the release's records and
// its objects in that namespace; objects elsewhere are left, as the Event and the log say.
func (r *Reconciler) letGo(ctx context.Context, orig, rel *v1alpha1.Release, d *desired, err error) {
	msg := fmt.Sprintf("namespace %s is being deleted and its ServiceAccount %s can no longer act (%s): release %s is not uninstalled; the namespace's deletion removes its records and its objects in namespace %s, and objects it has elsewhere are left",
		rel.Namespace, d.ServiceAccount, errorLine(err), d.ReleaseName, d.TargetNamespace)
	addHistory(rel, v1alpha1.OperationRecord{Operation: "uninstall", Outcome: "Skipped", ChartVersion: rel.Status.ChartVersion,
		StartedAt: metav1.Now(), Message: msg})
	setCondition(rel, ConditionReady, metav1.ConditionFalse, ReasonNamespaceTerminating, msg)
	log.FromContext(ctx).Info("uninstall skipped", "reason", ReasonNamespaceTerminating, "message", msg)
	r.event(ctx, rel, corev1.EventTypeWarning, ReasonNamespaceTerminating, "uninstall", msg)
	if err := r.patchStatus(ctx, orig, rel); err != nil {
		log.FromContext(ctx).Error(err, "report the uninstall skipped")
	}
}
