package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// Where a release's object stands when it is not in the cluster, or could not be read.
const (
	missing    readiness.State = "Missing"
	unreadable readiness.State = "Unknown"
)

// releaseObject is one object of a revision's manifest as it stands in the cluster.
type releaseObject struct {
	id resource.Identity
	// group is what status groups the object under: apiVersion/Kind, as Helm does.
	group string
	// live is the object the API server returned; nil when it is missing or unreadable.
	live  *unstructured.Unstructured
	ready readiness.Result
}

// releaseObjects reads every object of a revision's manifest from the cluster and says whether
// each is ready (a Job once it completed). Objects that could not be read say why.
func releaseObjects(ctx context.Context, c *cluster.Client, rel *release.Release) ([]releaseObject, error) {
	objs, err := resource.ParseManifest(rel.Manifest)
	if err != nil {
		return nil, fmt.Errorf("release %s/%s revision %d: read manifest: %w", rel.Namespace, rel.Name, rel.Version, err)
	}
	out := make([]releaseObject, 0, len(objs))
	ids := make([]resource.Identity, 0, len(objs))
	for _, obj := range objs {
		_ = c.Normalize(obj, rel.Namespace) // an unknown kind keeps the namespace it was written with
		id := resource.IdentityOf(obj)
		ids = append(ids, id)
		out = append(out, releaseObject{id: id, group: obj.GetAPIVersion() + "/" + obj.GetKind()})
	}
	live, readErr := c.Live(ctx, ids)
	for i := range out {
		o := &out[i]
		switch obj := live[o.id]; {
		case obj != nil:
			o.live = obj
			o.ready = readiness.Compute(obj, readiness.Options{WaitForJobs: true})
		case readErr != nil:
			o.ready = readiness.Result{State: unreadable, Message: "not every object could be read; see the error above"}
		default:
			o.ready = readiness.Result{State: missing, Message: "not found in the cluster"}
		}
	}
	slices.SortStableFunc(out, func(a, b releaseObject) int {
		return cmp.Or(cmp.Compare(a.group, b.group), resource.Compare(a.id, b.id))
	})
	return out, readErr
}

// relatedGroup is the group Helm's status puts the Pods of a release's workloads under.
const relatedGroup = "v1/Pod(related)"

// relatedPods lists the Pods the release's workloads select (each selector once), as Helm's
// status shows them, with whether each is ready.
func relatedPods(ctx context.Context, pods corev1client.PodsGetter, objs []releaseObject) ([]releaseObject, error) {
	var out []releaseObject
	var errs []error
	seen := map[string]bool{}
	for _, o := range objs {
		if o.live == nil {
			continue
		}
		selector, ok := podSelector(o.live)
		if !ok || len(selector) == 0 {
			continue
		}
		key := o.live.GetNamespace() + "/" + labels.SelectorFromSet(selector).String()
		if seen[key] {
			continue
		}
		seen[key] = true
		list, err := pods.Pods(o.live.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(selector).String()})
		if err != nil {
			errs = append(errs, fmt.Errorf("list the Pods of %s: %w", o.id, err))
			continue
		}
		for i := range list.Items {
			content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&list.Items[i])
			if err != nil {
				errs = append(errs, err)
				continue
			}
			pod := &unstructured.Unstructured{Object: content}
			pod.SetAPIVersion("v1")
			pod.SetKind("Pod")
			out = append(out, releaseObject{
				id: resource.IdentityOf(pod), group: relatedGroup, live: pod,
				ready: readiness.Compute(pod, readiness.Options{}),
			})
		}
	}
	slices.SortStableFunc(out, func(a, b releaseObject) int { return resource.Compare(a.id, b.id) })
	return out, errors.Join(errs...)
}

// podSelector is the label selector of a workload's Pods, for the kinds Helm's status follows.
func podSelector(obj *unstructured.Unstructured) (map[string]string, bool) {
	var sel map[string]string
	var found bool
	switch obj.GroupVersionKind().GroupKind().String() {
	case "Deployment.apps", "StatefulSet.apps", "DaemonSet.apps", "ReplicaSet.apps", "Job.batch":
		sel, found, _ = unstructured.NestedStringMap(obj.Object, "spec", "selector", "matchLabels")
	case "ReplicationController":
		sel, found, _ = unstructured.NestedStringMap(obj.Object, "spec", "selector")
	}
	return sel, found
}

// liveByGroup is what helm status puts in info.resources: the live objects by apiVersion/Kind.
func liveByGroup(objs []releaseObject) map[string][]runtime.Object {
	out := map[string][]runtime.Object{}
	for _, o := range objs {
		if o.live != nil {
			out[o.group] = append(out[o.group], o.live)
		}
	}
	return out
}

// writeResources prints the RESOURCES section of status: per apiVersion/Kind, each object and
// whether it is ready.
func writeResources(out io.Writer, namespace string, objs []releaseObject, readErr error) error {
	if len(objs) == 0 {
		return nil
	}
	if _, err := io.WriteString(out, "RESOURCES:\n"); err != nil {
		return err
	}
	if readErr != nil {
		fmt.Fprintf(out, "error: %v\n", readErr)
	}
	for i := 0; i < len(objs); {
		group := objs[i].group
		if _, err := fmt.Fprintf(out, "==> %s\n", group); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSTATUS\tMESSAGE")
		for ; i < len(objs) && objs[i].group == group; i++ {
			o := objs[i]
			name := o.id.Name
			if o.id.Namespace != "" && o.id.Namespace != namespace {
				name = o.id.Namespace + "/" + name
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", name, o.ready.State, o.ready.Message)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if _, err := io.WriteString(out, "\n"); err != nil {
			return err
		}
	}
	_, err := io.WriteString(out, "\n")
	return err
}
