package dashboard

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// Where an object of a release stands when it is not in the cluster, or could not be read.
const (
	stateMissing = "Missing"
	stateUnknown = "Unknown"
)

// objectView is one object of a release as it stands in the cluster.
type objectView struct {
	resource.Identity
	APIVersion string `json:"apiVersion"`
	State      string `json:"state"`
	Message    string `json:"message,omitempty"`
	// Terminating: the object is being deleted and is still there.
	Terminating bool `json:"terminating,omitempty"`
	// Blocker names what holds the object: the finalizers or dependents a deletion waits for,
	// a permission the user lacks to read it.
	Blocker *cluster.Blocker `json:"blocker,omitempty"`
	// Related: a Pod of one of the release's workloads, not an object of the release.
	Related bool `json:"related,omitempty"`
	// live is the object as read.
	live *unstructured.Unstructured
}

// objectsView are the objects of one revision of a release, and why some could not be read.
type objectsView struct {
	Revision int          `json:"revision"`
	Objects  []objectView `json:"objects"`
	Error    string       `json:"error,omitempty"`
}

// releaseObjects reads the objects of a release's newest revision (or revision=N) and the Pods of
// its workloads, with readiness and, for what is held, what holds it.
func (s *Server) releaseObjects(r *request) (any, error) {
	ns, name, err := releaseKey(r)
	if err != nil {
		return nil, err
	}
	version, err := intParam(r, "revision")
	if err != nil {
		return nil, err
	}
	store, err := s.store(r.clients, ns)
	if err != nil {
		return nil, err
	}
	rel, err := revisionOf(r.ctx, store, name, version)
	if err != nil {
		return nil, err
	}
	v := objectsView{Revision: rel.Version, Objects: []objectView{}}
	if rel.Info != nil && rel.Info.Status == release.StatusUninstalled {
		return v, nil
	}
	c := cluster.New(r.clients.Dynamic, r.clients.Mapper)
	objs, readErr := liveObjects(r.ctx, c, rel)
	pods, podErr := relatedPods(r.ctx, r.clients, objs)
	v.Objects = append(objs, pods...)
	if readErr != nil {
		v.Error = readErr.Error()
	} else if podErr != nil {
		v.Error = podErr.Error()
	}
	return v, nil
}

// intParam reads a number parameter; 0 when absent.
func intParam(r *request, name string) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, nil
	}
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil || n < 0 {
		return 0, &InputError{Msg: fmt.Sprintf("%s %q: want a number, 0 or more", name, s)}
	}
	return n, nil
}

// liveObjects reads every object of a revision's manifest from the cluster: whether each is
// ready (a Job once complete) and, for an object being deleted, what its deletion waits for.
func liveObjects(ctx context.Context, c *cluster.Client, rel *release.Release) ([]objectView, error) {
	objs, err := resource.ParseManifest(rel.Manifest)
	if err != nil {
		return nil, fmt.Errorf("release %s/%s revision %d: read manifest: %w", rel.Namespace, rel.Name, rel.Version, err)
	}
	out := make([]objectView, 0, len(objs))
	ids := make([]resource.Identity, 0, len(objs))
	for _, obj := range objs {
		_ = c.Normalize(obj, rel.Namespace) // an unknown kind keeps the namespace it was written with
		id := resource.IdentityOf(obj)
		ids = append(ids, id)
		out = append(out, objectView{Identity: id, APIVersion: obj.GetAPIVersion()})
	}
	live, readErr := c.Live(ctx, ids)
	for i := range out {
		o := &out[i]
		switch obj := live[o.Identity]; {
		case obj != nil:
			o.live = obj
			res := readiness.Compute(obj, readiness.Options{WaitForJobs: true})
			o.State, o.Message = string(res.State), res.Message
			if obj.GetDeletionTimestamp() != nil {
				o.Terminating = true
				b := c.Diagnose(ctx, o.Identity, "DELETE", nil)
				o.Blocker = &b
			}
		case readErr != nil:
			o.State, o.Message = stateUnknown, "not every object could be read: "+readErr.Error()
			if apierrors.IsForbidden(readErr) {
				o.Blocker = &cluster.Blocker{Object: o.Identity, Kind: cluster.BlockedByPermission, Message: readErr.Error(),
					Next: fmt.Sprintf("ask for get and list of %s in namespace %q", o.Kind, o.Namespace)}
			}
		default:
			o.State, o.Message = stateMissing, "not found in the cluster"
		}
	}
	slices.SortStableFunc(out, func(a, b objectView) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), resource.Compare(a.Identity, b.Identity))
	})
	return out, readErr
}

// relatedPods lists the Pods the release's workloads select (each selector once), with whether
// each is ready.
func relatedPods(ctx context.Context, clients *kube.Clients, objs []objectView) ([]objectView, error) {
	var out []objectView
	seen := map[string]bool{}
	for _, o := range objs {
		sel, ok := podSelectorOf(o)
		if !ok {
			continue
		}
		key := o.Namespace + "/" + sel
		if seen[key] {
			continue
		}
		seen[key] = true
		list, err := clients.Client.CoreV1().Pods(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return out, fmt.Errorf("list the Pods of %s: %w", o.Identity, err)
		}
		for i := range list.Items {
			content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&list.Items[i])
			if err != nil {
				return out, err
			}
			pod := &unstructured.Unstructured{Object: content}
			pod.SetAPIVersion("v1")
			pod.SetKind("Pod")
			res := readiness.Compute(pod, readiness.Options{})
			out = append(out, objectView{Identity: resource.IdentityOf(pod), APIVersion: "v1", State: string(res.State),
				Message: res.Message, Related: true, Terminating: pod.GetDeletionTimestamp() != nil})
		}
	}
	slices.SortStableFunc(out, func(a, b objectView) int { return resource.Compare(a.Identity, b.Identity) })
	return out, nil
}

// podSelectorOf is the label selector of a workload's Pods, for the kinds Helm's status follows.
func podSelectorOf(o objectView) (string, bool) {
	var path []string
	switch o.Kind + "." + o.Group {
	case "Deployment.apps", "StatefulSet.apps", "DaemonSet.apps", "ReplicaSet.apps", "Job.batch":
		path = []string{"spec", "selector", "matchLabels"}
	case "ReplicationController.":
		path = []string{"spec", "selector"}
	default:
		return "", false
	}
	if o.live == nil {
		return "", false
	}
	sel, found, _ := unstructured.NestedStringMap(o.live.Object, path...)
	if !found || len(sel) == 0 {
		return "", false
	}
	return labels.SelectorFromSet(sel).String(), true
}
