package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// deletionWatch notes when each of a release's objects disappears, as a watch sees it. An object
// is the one that existed when the watch started (its UID): one of the same name created later
// is another object.
type deletionWatch struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	// gone holds, by object, when its deletion was seen; zero until it was.
	gone    map[watchKey]time.Time
	uids    map[watchKey]types.UID
	changed chan struct{}
}

type watchKey struct {
	gvr  schema.GroupVersionResource
	name string
}

// watchDeletion starts watching every resource type of objs in namespace ns, with an informer
// each: a list, then a watch that lists again after any gap, so that no deletion goes unseen.
func (h *harness) watchDeletion(ctx context.Context, ns string, objs []*unstructured.Unstructured) (*deletionWatch, error) {
	wctx, cancel := context.WithCancel(ctx)
	dw := &deletionWatch{cancel: cancel, gone: map[watchKey]time.Time{}, uids: map[watchKey]types.UID{}, changed: make(chan struct{}, 1)}
	types := map[schema.GroupVersionResource]bool{}
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		m, err := h.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			h.mapper.Reset()
			if m, err = h.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				cancel()
				return nil, fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
			}
		}
		dw.gone[watchKey{m.Resource, obj.GetName()}] = time.Time{}
		types[m.Resource] = true
	}
	for gvr := range types {
		inf := dynamicinformer.NewFilteredDynamicInformer(h.dynamic, gvr, ns, 0, cache.Indexers{}, nil).Informer()
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) { dw.deleted(gvr, obj) }})
		if err != nil {
			cancel()
			return nil, err
		}
		go inf.Run(wctx.Done())
		select {
		case <-reg.HasSyncedChecker().Done():
		case <-wctx.Done():
			cancel()
			return nil, fmt.Errorf("watch %s: %w", gvr.Resource, wctx.Err())
		}
		// Each object is known by the UID it has now; one that does not exist is gone already.
		started := time.Now()
		dw.mu.Lock()
		for k := range dw.gone {
			if k.gvr != gvr {
				continue
			}
			item, exists, err := inf.GetStore().GetByKey(ns + "/" + k.name)
			if u, ok := item.(*unstructured.Unstructured); err == nil && exists && ok {
				dw.uids[k] = u.GetUID()
			} else {
				dw.gone[k] = started
			}
		}
		dw.mu.Unlock()
	}
	return dw, nil
}

// deleted notes that the informer of gvr saw obj go.
func (dw *deletionWatch) deleted(gvr schema.GroupVersionResource, obj any) {
	now := time.Now()
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	k := watchKey{gvr, u.GetName()}
	dw.mu.Lock()
	if t, tracked := dw.gone[k]; tracked && t.IsZero() && dw.uids[k] == u.GetUID() {
		dw.gone[k] = now
	}
	dw.mu.Unlock()
	select {
	case dw.changed <- struct{}{}:
	default:
	}
}

// lastGone returns when the last object disappeared, waiting up to grace for deletions the
// watch has not seen yet, or the objects it did not see go in that time.
func (dw *deletionWatch) lastGone(ctx context.Context, grace time.Duration) (time.Time, []string) {
	timeout := time.NewTimer(grace)
	defer timeout.Stop()
	for {
		dw.mu.Lock()
		var last time.Time
		var missing []string
		for k, t := range dw.gone {
			if t.IsZero() {
				missing = append(missing, k.gvr.Resource+"/"+k.name)
			}
			if t.After(last) {
				last = t
			}
		}
		dw.mu.Unlock()
		if len(missing) == 0 {
			return last, nil
		}
		select {
		case <-dw.changed:
		case <-timeout.C:
			return time.Time{}, missing
		case <-ctx.Done():
			return time.Time{}, missing
		}
	}
}

func (dw *deletionWatch) stop() { dw.cancel() }
