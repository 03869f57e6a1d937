// Package cluster is the only package that talks to the API server: REST mapping, server-side
// apply (field manager "berth"), deletion with UID preconditions, and watch-based trackers.
package cluster

import (
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"

	"github.com/berthdev/berth/internal/resource"
)

// FieldManager is the field manager of every server-side apply berth makes.
const FieldManager = "berth"

// Client reaches the API server for objects of any kind.
type Client struct {
	dynamic dynamic.Interface
	mapper  meta.ResettableRESTMapper
	// mappings remembers what the mapper answered, until ResetMapper: an operation asks for the
	// same few kinds once per object and request, and the mapper allocates on every answer.
	mu       sync.Mutex
	mappings map[schema.GroupVersionKind]*meta.RESTMapping
	// podLogs reads Pod logs for hook reports (see WithPodLogs); may be nil.
	podLogs corev1client.PodsGetter
	// metadata reads objects' metadata alone (see WithMetadata); may be nil.
	metadata metadata.Interface
}

// New returns a Client. The mapper should be discovery-based: ResetMapper makes it see kinds
// whose CRDs were just installed.
func New(dyn dynamic.Interface, mapper meta.ResettableRESTMapper) *Client {
	return &Client{dynamic: dyn, mapper: mapper}
}

// ResetMapper forgets what the mapper learnt from discovery.
func (c *Client) ResetMapper() {
	c.mu.Lock()
	c.mappings = nil
	c.mu.Unlock()
	c.mapper.Reset()
}

// UnknownKindError says the API server serves no such kind.
type UnknownKindError struct {
	GVK schema.GroupVersionKind
	Err error
}

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("unknown kind %s in %s: the API server serves no such kind (is its CRD installed?)", e.GVK.Kind, e.GVK.GroupVersion())
}

func (e *UnknownKindError) Unwrap() error { return e.Err }

// Mapping returns how an object of gvk is reached. An unversioned gvk takes the preferred version.
func (c *Client) Mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	c.mu.Lock()
	m, ok := c.mappings[gvk]
	c.mu.Unlock()
	if ok {
		return m, nil
	}
	m, err := c.mapping(gvk)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.mappings == nil {
		c.mappings = map[schema.GroupVersionKind]*meta.RESTMapping{}
	}
	c.mappings[gvk] = m
	c.mu.Unlock()
	return m, nil
}

func (c *Client) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	var versions []string
	if gvk.Version != "" {
		versions = []string{gvk.Version}
	}
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), versions...)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, &UnknownKindError{GVK: gvk, Err: err}
		}
		return nil, fmt.Errorf("map %s: %w", gvk, err)
	}
	return m, nil
}

// Namespaced reports whether objects of gvk live in namespaces.
func (c *Client) Namespaced(gvk schema.GroupVersionKind) (bool, error) {
	m, err := c.Mapping(gvk)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// Normalize gives a namespaced object without a namespace the default one and takes the
// namespace off a cluster-scoped object, as the API server would see them.
func (c *Client) Normalize(obj *unstructured.Unstructured, defaultNamespace string) error {
	namespaced, err := c.Namespaced(obj.GroupVersionKind())
	if err != nil {
		return err
	}
	switch {
	case !namespaced:
		obj.SetNamespace("")
	case obj.GetNamespace() == "":
		obj.SetNamespace(defaultNamespace)
	}
	return nil
}

// resourceFor returns the dynamic client for the object named by id, reached at version (or the
// preferred version when empty).
func (c *Client) resourceFor(id resource.Identity, version string) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	m, err := c.Mapping(schema.GroupVersionKind{Group: id.Group, Version: version, Kind: id.Kind})
	if err != nil {
		return nil, nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if id.Namespace == "" {
			return nil, nil, fmt.Errorf("%s: namespaced kind without a namespace", id)
		}
		return c.dynamic.Resource(m.Resource).Namespace(id.Namespace), m, nil
	}
	return c.dynamic.Resource(m.Resource), m, nil
}

// IsUnknownKind reports whether err says a kind is not served.
func IsUnknownKind(err error) bool {
	var u *UnknownKindError
	return errors.As(err, &u)
}
