package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/berthdev/berth/internal/par"
	"github.com/berthdev/berth/internal/resource"
)

// ListThreshold is how many objects of one resource in one namespace make Live and LiveObjects
// list them rather than read them one by one.
const ListThreshold = 8

// liveConcurrency bounds Live's reads at once.
const liveConcurrency = 16

// WithMetadata lets Live read objects' metadata alone, and list many of one resource at once.
func (c *Client) WithMetadata(m metadata.Interface) *Client {
	c.metadata = m
	return c
}

// Live returns the metadata (apiVersion, kind and metadata: names, UID, resourceVersion, labels,
// annotations, owners, managed fields) of every object of ids that exists. Objects whose kind is not
// served are left out: their CRD is not installed, so neither are they. Many objects of one
// resource in one namespace are listed in one request; the others are read one by one. Without
// WithMetadata, whole objects are read one by one.
func (c *Client) Live(ctx context.Context, ids []resource.Identity) (map[resource.Identity]*unstructured.Unstructured, error) {
	targets := make([]liveTarget, len(ids))
	for i, id := range ids {
		targets[i] = liveTarget{id: id, gvk: schema.GroupVersionKind{Group: id.Group, Kind: id.Kind}}
	}
	return c.live(ctx, targets, false)
}

// LiveObjects returns the whole live object of every object of objs that exists, read at the API
// version of objs (the preferred one when it is not served), with as many requests as Live: many
// objects of one resource in one namespace are listed in one request, the others read one by
// one. Objects whose kind is not served are left out.
func (c *Client) LiveObjects(ctx context.Context, objs []*unstructured.Unstructured) (map[resource.Identity]*unstructured.Unstructured, error) {
	targets := make([]liveTarget, len(objs))
	for i, obj := range objs {
		targets[i] = liveTarget{id: resource.IdentityOf(obj), gvk: obj.GroupVersionKind()}
	}
	return c.live(ctx, targets, true)
}

// liveTarget is an object to read, at the version of gvk (the preferred one when empty).
type liveTarget struct {
	id  resource.Identity
	gvk schema.GroupVersionKind
}

// targetMapping returns how t is reached: at its version, or at the preferred version when its
// version is not served.
func (c *Client) targetMapping(t liveTarget) (*meta.RESTMapping, error) {
	m, err := c.Mapping(t.gvk)
	if IsUnknownKind(err) && t.gvk.Version != "" {
		return c.Mapping(schema.GroupVersionKind{Group: t.gvk.Group, Kind: t.gvk.Kind})
	}
	return m, err
}

// live reads the targets that exist: whole objects, or their metadata alone when whole is false
// and c has a metadata client.
func (c *Client) live(ctx context.Context, targets []liveTarget, whole bool) (map[resource.Identity]*unstructured.Unstructured, error) {
	type group struct {
		mapping   *meta.RESTMapping
		namespace string
		ids       []resource.Identity
	}
	groups := map[string]*group{}
	var order []string
	var errs []error
	for _, t := range targets {
		id := t.id
		m, err := c.targetMapping(t)
		if IsUnknownKind(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
			continue
		}
		ns := id.Namespace
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			ns = ""
		}
		key := m.Resource.String() + "/" + ns
		if groups[key] == nil {
			groups[key] = &group{mapping: m, namespace: ns}
			order = append(order, key)
		}
		groups[key].ids = append(groups[key].ids, id)
	}

	out := map[resource.Identity]*unstructured.Unstructured{}
	var mu sync.Mutex
	found := func(id resource.Identity, obj *unstructured.Unstructured) {
		mu.Lock()
		out[id] = obj
		mu.Unlock()
	}
	var reads []func(context.Context) error
	for _, key := range order {
		g := groups[key]
		if (whole || c.metadata != nil) && g.namespace != "" && len(g.ids) >= ListThreshold {
			reads = append(reads, func(ctx context.Context) error {
				byName, err := c.list(ctx, g.mapping, g.namespace, whole)
				if err != nil {
					return err
				}
				for _, id := range g.ids {
					if obj := byName[id.Name]; obj != nil {
						found(id, obj)
					}
				}
				return nil
			})
			continue
		}
		for _, id := range g.ids {
			reads = append(reads, func(ctx context.Context) error {
				var obj *unstructured.Unstructured
				var err error
				if whole {
					obj, err = c.readWhole(ctx, g.mapping, g.namespace, id)
				} else {
					obj, err = c.readOne(ctx, g.mapping, g.namespace, id)
				}
				if err != nil || obj == nil {
					return err
				}
				found(id, obj)
				return nil
			})
		}
	}
	errs = append(errs, par.Each(ctx, reads, liveConcurrency, func(ctx context.Context, read func(context.Context) error) error {
		return read(ctx)
	})...)
	return out, errors.Join(errs...)
}

// list lists the objects of m in namespace, whole or their metadata alone, by name.
func (c *Client) list(ctx context.Context, m *meta.RESTMapping, namespace string, whole bool) (map[string]*unstructured.Unstructured, error) {
	fail := func(err error) error {
		return fmt.Errorf("list %s in namespace %s: %w", m.Resource.Resource, namespace, err)
	}
	if whole {
		list, err := c.dynamic.Resource(m.Resource).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fail(err)
		}
		byName := make(map[string]*unstructured.Unstructured, len(list.Items))
		for i := range list.Items {
			obj := &list.Items[i]
			obj.SetGroupVersionKind(m.GroupVersionKind)
			byName[obj.GetName()] = obj
		}
		return byName, nil
	}
	list, err := c.metadata.Resource(m.Resource).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fail(err)
	}
	byName := make(map[string]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		obj, err := fromMetadata(&list.Items[i], m.GroupVersionKind)
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", m.GroupVersionKind.Kind, namespace, list.Items[i].Name, err)
		}
		byName[list.Items[i].Name] = obj
	}
	return byName, nil
}

// readWhole reads one whole object as m reaches it; nil when it does not exist.
func (c *Client) readWhole(ctx context.Context, m *meta.RESTMapping, namespace string, id resource.Identity) (*unstructured.Unstructured, error) {
	var ri dynamic.ResourceInterface = c.dynamic.Resource(m.Resource)
	if namespace != "" {
		ri = c.dynamic.Resource(m.Resource).Namespace(namespace)
	}
	obj, err := ri.Get(ctx, id.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: get: %w", id, err)
	}
	return obj, nil
}

// readOne reads one object's metadata (the whole object without a metadata client); nil when it
// does not exist.
func (c *Client) readOne(ctx context.Context, m *meta.RESTMapping, namespace string, id resource.Identity) (*unstructured.Unstructured, error) {
	if c.metadata == nil {
		return c.Get(ctx, id)
	}
	ri := c.metadata.Resource(m.Resource)
	var item *metav1.PartialObjectMetadata
	var err error
	if namespace != "" {
		item, err = ri.Namespace(namespace).Get(ctx, id.Name, metav1.GetOptions{})
	} else {
		item, err = ri.Get(ctx, id.Name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: get: %w", id, err)
	}
	obj, err := fromMetadata(item, m.GroupVersionKind)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	return obj, nil
}

// fromMetadata turns an object's metadata into an object of kind gvk that has nothing else.
func fromMetadata(item *metav1.PartialObjectMetadata, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(item)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{Object: content}
	obj.SetGroupVersionKind(gvk)
	return obj, nil
}
