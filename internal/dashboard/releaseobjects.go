package dashboard

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/berthdev/berth/api/v1alpha1"
)

// releasesGVR is the resource of the controller's Release objects.
var releasesGVR = v1alpha1.GroupVersion.WithResource("releases")

// releaseObjectRow is one Release object (berth.dev) of the list.
type releaseObjectRow struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Ready is the Ready condition's status, reason and message.
	Ready   string `json:"ready"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// The release it produced: its namespace, name and revision, and the chart.
	TargetNamespace string `json:"targetNamespace"`
	ReleaseName     string `json:"releaseName"`
	Revision        int    `json:"revision,omitempty"`
	Chart           string `json:"chart,omitempty"`
	Suspended       bool   `json:"suspended,omitempty"`
	Blockers        int    `json:"blockers"`
}

// releaseObjectList are the Release objects the user may read; Served is false when the cluster
// serves no Releases (berth's CRDs are not installed).
type releaseObjectList struct {
	Served bool               `json:"served"`
	Items  []releaseObjectRow `json:"items"`
	Error  string             `json:"error,omitempty"`
}

// releaseObjectList lists the controller's Release objects of a namespace, or of every one.
func (s *Server) releaseObjectList(r *request, namespace string) (releaseObjectList, error) {
	out := releaseObjectList{Served: true, Items: []releaseObjectRow{}}
	list, err := r.clients.Dynamic.Resource(releasesGVR).Namespace(namespace).List(r.ctx, metav1.ListOptions{})
	switch {
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		out.Served = false
		return out, nil
	case err != nil:
		return out, err
	}
	for i := range list.Items {
		rel, err := asRelease(&list.Items[i])
		if err != nil {
			return out, err
		}
		out.Items = append(out.Items, rowOfObject(rel))
	}
	slices.SortFunc(out.Items, func(a, b releaseObjectRow) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

func asRelease(u *unstructured.Unstructured) (*v1alpha1.Release, error) {
	var rel v1alpha1.Release
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &rel); err != nil {
		return nil, fmt.Errorf("Release %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return &rel, nil
}

func rowOfObject(rel *v1alpha1.Release) releaseObjectRow {
	row := releaseObjectRow{Name: rel.Name, Namespace: rel.Namespace, Ready: "Unknown",
		TargetNamespace: cmp.Or(rel.Status.TargetNamespace, rel.Spec.TargetNamespace, rel.Namespace),
		ReleaseName:     cmp.Or(rel.Status.ReleaseName, rel.Spec.ReleaseName, rel.Name),
		Revision:        rel.Status.Revision, Suspended: rel.Spec.Suspend, Blockers: len(rel.Status.Blockers)}
	if rel.Status.ChartName != "" {
		row.Chart = rel.Status.ChartName + "-" + rel.Status.ChartVersion
	}
	if c := meta.FindStatusCondition(rel.Status.Conditions, "Ready"); c != nil {
		row.Ready, row.Reason, row.Message = string(c.Status), c.Reason, c.Message
	}
	return row
}

// releaseObjectView is one Release object: its conditions, events, blockers, dependencies and
// the revision it produced.
type releaseObjectView struct {
	releaseObjectRow
	Generation         int64                      `json:"generation"`
	ObservedGeneration int64                      `json:"observedGeneration"`
	Conditions         []metav1.Condition         `json:"conditions"`
	Blockers           []v1alpha1.Blocker         `json:"blockerList"`
	History            []v1alpha1.OperationRecord `json:"history"`
	CurrentStep        string                     `json:"currentStep,omitempty"`
	Failures           int32                      `json:"failures"`
	Dependencies       []dependencyView           `json:"dependencies"`
	Events             []eventView                `json:"events"`
	EventsError        string                     `json:"eventsError,omitempty"`
}

type dependencyView struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Ready     string `json:"ready"`
	Reason    string `json:"reason,omitempty"`
}

type eventView struct {
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Count   int32     `json:"count"`
	Last    time.Time `json:"last,omitzero"`
}

// releaseObject reads one Release object (namespace, name) and its events.
func (s *Server) releaseObject(r *request) (any, error) {
	ns, name, err := releaseKey(r)
	if err != nil {
		return nil, err
	}
	u, err := r.clients.Dynamic.Resource(releasesGVR).Namespace(ns).Get(r.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	rel, err := asRelease(u)
	if err != nil {
		return nil, err
	}
	v := releaseObjectView{releaseObjectRow: rowOfObject(rel), Generation: rel.Generation, ObservedGeneration: rel.Status.ObservedGeneration,
		Conditions: rel.Status.Conditions, Blockers: rel.Status.Blockers, History: rel.Status.History, CurrentStep: rel.Status.CurrentStep,
		Failures: rel.Status.Failures, Dependencies: []dependencyView{}, Events: []eventView{}}
	for _, d := range rel.Spec.DependsOn {
		dv := dependencyView{Namespace: cmp.Or(d.Namespace, ns), Name: d.Name, Ready: "Unknown"}
		if du, err := r.clients.Dynamic.Resource(releasesGVR).Namespace(dv.Namespace).Get(r.ctx, d.Name, metav1.GetOptions{}); err != nil {
			dv.Reason = err.Error()
		} else if dep, err := asRelease(du); err == nil {
			row := rowOfObject(dep)
			dv.Ready, dv.Reason = row.Ready, row.Reason
		}
		v.Dependencies = append(v.Dependencies, dv)
	}
	sel := fields.Set{"involvedObject.name": name, "involvedObject.kind": "Release"}.AsSelector().String()
	events, err := r.clients.Client.CoreV1().Events(ns).List(r.ctx, metav1.ListOptions{FieldSelector: sel, Limit: 100})
	if err != nil {
		v.EventsError = err.Error()
		return v, nil
	}
	slices.SortFunc(events.Items, func(a, b corev1.Event) int { return lastSeen(b).Compare(lastSeen(a)) })
	for _, e := range events.Items {
		v.Events = append(v.Events, eventView{Type: e.Type, Reason: e.Reason, Message: e.Message, Count: max(e.Count, 1), Last: lastSeen(e)})
	}
	return v, nil
}

func lastSeen(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}
