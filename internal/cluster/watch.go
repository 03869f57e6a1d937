package cluster

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/berthdev/berth/internal/resource"
)

// observation is what a watch saw of one tracked object: its latest state; when gone, its final
// state (nil when it was never seen). An observation with refused set has no object: the API
// server refused to list or watch the object's resource, and the watch will never see it.
type observation struct {
	id      resource.Identity
	obj     *unstructured.Unstructured
	gone    bool
	refused error
}

// watchGroup is the set of tracked objects reached by one resource in one namespace: they share one
// list+watch, which re-lists by itself after any watch gap or error.
type watchGroup struct {
	gvr       schema.GroupVersionResource
	namespace string
	names     map[string]resource.Identity
}

// observe lists and watches every target and sends each change of a target to out until ctx ends:
// first its current state (nil if absent), then every update, and nil when it is deleted. The
// watches run in the background and stop when ctx ends. synced closes once every initial list
// is done and the first state of every target was sent: every change after that is seen.
func (c *Client) observe(ctx context.Context, targets []resource.Identity, out chan<- observation) (synced <-chan struct{}, err error) {
	groups := map[string]*watchGroup{}
	for _, id := range targets {
		_, m, err := c.resourceFor(id, "")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		key := m.Resource.String() + "/" + id.Namespace
		g, ok := groups[key]
		if !ok {
			g = &watchGroup{gvr: m.Resource, namespace: id.Namespace, names: map[string]resource.Identity{}}
			groups[key] = g
		}
		g.names[id.Name] = id
	}
	each := make(chan struct{}, len(groups))
	for _, g := range groups {
		go c.observeGroup(ctx, g, out, each)
	}
	return allSynced(ctx, len(groups), each), nil
}

// allSynced returns a channel closed once n watches each sent on each that their first list is
// done; never closed when ctx ends first.
func allSynced(ctx context.Context, n int, each <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for range n {
			select {
			case <-each:
			case <-ctx.Done():
				return
			}
		}
		close(done)
	}()
	return done
}

func (c *Client) observeGroup(ctx context.Context, g *watchGroup, out chan<- observation, synced chan<- struct{}) {
	tweak := func(o *metav1.ListOptions) {
		if len(g.names) == 1 {
			for name := range g.names {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
			}
		}
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(c.dynamic, g.gvr, g.namespace, 0, cache.Indexers{}, tweak).Informer()
	// What a wait judges never needs the managed fields, often the biggest part of an object.
	if err := inf.SetTransform(dropManagedFields); err != nil {
		return
	}
	send := func(obj any, gone bool) {
		u, tombstone := unwrap(obj)
		if u == nil {
			return
		}
		gone = gone || tombstone
		id, tracked := g.names[u.GetName()]
		if !tracked {
			return
		}
		o := observation{id: id, obj: u, gone: gone}
		select {
		case out <- o:
		case <-ctx.Done():
		}
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { send(obj, false) },
		UpdateFunc: func(_, obj any) { send(obj, false) },
		DeleteFunc: func(obj any) { send(obj, true) },
	})
	if err != nil {
		return
	}
	// An informer retries a refused list for ever: a wait on it would hold until its deadline,
	// hiding the missing permission (or the account, gone with its namespace's deletion).
	refusal := refusalOnce(ctx, g, out)
	if err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if refused(err) {
			refusal(err)
			return
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	}); err != nil {
		return
	}
	go inf.Run(ctx.Done())
	// Wait on the handler's sync channel rather than polling HasSynced: a poll (cache.
	// WaitForCacheSync checks every 100 ms) would delay every hook and every wait by up to that.
	select {
	case <-reg.HasSyncedChecker().Done():
	case <-ctx.Done():
		return
	}
	// Targets that the first list did not hold are absent.
	for name, id := range g.names {
		if _, exists, _ := inf.GetStore().GetByKey(key(g.namespace, name)); !exists {
			select {
			case out <- observation{id: id, gone: true}:
			case <-ctx.Done():
				return
			}
		}
	}
	synced <- struct{}{}
	<-ctx.Done()
}

// refused says the API server refused a list or watch for who asked: no retry changes that
// until someone grants a permission.
func refused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
}

// refusalOnce returns a func that sends one refusal observation, for a tracked object of g, the
// first time it is called: every consumer ends its watch on the first refusal.
func refusalOnce(ctx context.Context, g *watchGroup, out chan<- observation) func(error) {
	var once sync.Once
	return func(err error) {
		once.Do(func() {
			for _, id := range g.names {
				select {
				case out <- observation{id: id, refused: err}:
				case <-ctx.Done():
				}
				return
			}
		})
	}
}

// unwrap returns the object an informer handed over, and whether it came as the tombstone of a
// deletion whose final state was not seen; nil when it is neither.
func unwrap(obj any) (u *unstructured.Unstructured, tombstone bool) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, false
	}
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		u, _ := tomb.Obj.(*unstructured.Unstructured)
		return u, u != nil
	}
	return nil, false
}

func dropManagedFields(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetManagedFields(nil)
	}
	return obj, nil
}

func key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
