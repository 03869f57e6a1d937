package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/release"
)

// followed is what a page's stream of events follows: a resource, and which of its objects.
type followed struct {
	gvr   schema.GroupVersionResource
	label string
	field string
}

var (
	secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	leasesGVR  = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
)

// releaseFollowed is what every page follows: the records of releases (Helm's Secrets), the
// journals of operations and the controller's Release objects.
var releaseFollowed = []followed{
	{gvr: secretsGVR, label: "owner=helm"},
	{gvr: secretsGVR, field: "type=" + release.JournalSecretType},
	{gvr: releasesGVR},
}

// namespaceFollowed is what the page of one release follows in its namespace besides: the
// workloads, their Pods and the leases of operations under way.
var namespaceFollowed = []followed{
	{gvr: schema.GroupVersionResource{Version: "v1", Resource: "pods"}},
	{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}},
	{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}},
	{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}},
	{gvr: schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}},
	{gvr: leasesGVR},
}

// changeEvent tells a page that something it shows changed.
type changeEvent struct {
	Resource  string `json:"resource"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Type      string `json:"type"`
}

// heartbeat keeps a page's stream open through proxies, and finds a page that went away.
const heartbeat = 15 * time.Second

// events streams to a page (server-sent events) every change of what it shows, as the cluster's
// watches report it: namespace="" follows the records of every namespace; with a namespace, its
// records and the workloads, Pods and leases in it. A page re-reads what it shows when told.
// What the user may not watch is said once, in a "status" event.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	clients, err := s.clientsOf(s.contextOf(r))
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, fmt.Errorf("streaming is not supported"))
		return
	}
	ns := r.URL.Query().Get("namespace")
	what := releaseFollowed
	if ns != "" {
		what = append(append([]followed{}, releaseFollowed...), namespaceFollowed...)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	changes := make(chan changeEvent, 64)
	unwatched := make(chan string, len(what))
	var wg sync.WaitGroup
	for _, f := range what {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := follow(ctx, clients, ns, f, changes); err != nil && ctx.Err() == nil {
				unwatched <- fmt.Sprintf("%s: %v", f.gvr.Resource, err)
			}
		}()
	}
	defer wg.Wait()
	send := func(event string, v any) bool {
		data, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data); err != nil {
			return false
		}
		flusher.Flush()
		return true
	}
	if !send("ready", map[string]string{"namespace": ns}) {
		return
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case c := <-changes:
			if !send("change", c) {
				return
			}
		case msg := <-unwatched:
			if !send("status", map[string]string{"unwatched": msg}) {
				return
			}
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// follow watches the objects f names (their metadata only) from now on, and starts again where
// it was when the API server ends a watch, until ctx ends. It returns an error when it cannot
// watch at all (a resource not served, a permission the user lacks).
func follow(ctx context.Context, clients *kube.Clients, namespace string, f followed, out chan<- changeEvent) error {
	res := clients.Metadata.Resource(f.gvr).Namespace(namespace)
	opts := metav1.ListOptions{LabelSelector: f.label, FieldSelector: f.field}
	for ctx.Err() == nil {
		// A list of one item gives the version to watch from, so that the watch does not send
		// every object there is first.
		list, err := res.List(ctx, metav1.ListOptions{LabelSelector: f.label, FieldSelector: f.field, Limit: 1})
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil // not served here (berth's CRDs not installed): nothing of it to follow
		}
		if err != nil {
			return err
		}
		opts.ResourceVersion = list.ResourceVersion
		wi, err := res.Watch(ctx, opts)
		if err != nil {
			return err
		}
		for e := range wi.ResultChan() {
			if e.Type == watch.Error || e.Type == watch.Bookmark {
				continue
			}
			obj, ok := e.Object.(metav1.Object)
			if !ok {
				continue
			}
			select {
			case out <- changeEvent{Resource: f.gvr.Resource, Namespace: obj.GetNamespace(), Name: obj.GetName(), Type: string(e.Type)}:
			case <-ctx.Done():
				wi.Stop()
				return nil
			}
		}
		wi.Stop()
	}
	return nil
}
