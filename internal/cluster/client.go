// Package cluster is the only package that talks to the API server: REST mapping, server-side
// apply (field manager "helm", shared with Helm v4), deletion with UID preconditions, and watch-based trackers.
package cluster

import (
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"

	"github.com/berthdev/berth/internal/resource"
)

// FieldManager is the field manager of every server-side apply berth makes: the one Helm v4's
// own server-side apply uses, so that a release moves between helm and berth without conflicts
// and each tool's apply removes what the other set and the chart dropped.
const FieldManager = "helm"

// formerManager is the field manager berth applied with before it shared Helm's: its fields are
// moved to FieldManager by the next operation (see AdoptFields).
const formerManager = "berth"

// Client reaches the API server for objects of any kind.
type Client struct {
	dynamic dynamic.Interface
	mapper  meta.ResettableRESTMapper
	// mappings remembers what the mapper answered, until ResetMapper: an operation asks for the
	// same few kinds once per object and request, and the mapper allocates on every answer.
	mu       sync.Mutex
	mappings map[schema.GroupVersionKind]*meta.RESTMapping
	// reset says c reset the mapper: what it maps since is what the API server served after c
	// was made.
	reset bool
	// podLogs reads Pod logs for hook reports (see WithPodLogs); may be nil.
	podLogs corev1client.PodsGetter
	// metadata reads objects' metadata alone (see WithMetadata); may be nil.
	metadata metadata.Interface
	// discovery tells an unknown kind from one whose API is unavailable (see WithDiscovery); may
	// be nil.
	discovery discovery.DiscoveryInterface
}

// WithDiscovery makes c ask discovery, when a kind is unknown, whether its group version is
// registered but unavailable, so that the error names the APIService to repair.
func (c *Client) WithDiscovery(d discovery.DiscoveryInterface) *Client {
	c.discovery = d
	return c
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
	c.reset = true
	c.mu.Unlock()
	c.mapper.Reset()
}

// UnknownKindError says the API server serves no such kind.
type UnknownKindError struct {
	GVK schema.GroupVersionKind
	Err error
	// Unavailable, when set, says the group version is registered but cannot be discovered now:
	// its APIService is not Available. It is what discovery answered.
	Unavailable error
}

func (e *UnknownKindError) Error() string {
	gv := e.GVK.GroupVersion()
	if e.Unavailable != nil {
		return fmt.Sprintf("unknown kind %s in %s: %s is not served now (%v); the APIService %s.%s that serves it is not Available: bring its service back (berth doctor names it)",
			e.GVK.Kind, gv, gv, e.Unavailable, gv.Version, gv.Group)
	}
	return fmt.Sprintf("unknown kind %s in %s: the API server serves no such kind (is its CRD installed?)", e.GVK.Kind, gv)
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
	c.mu.Lock()
	stale := !c.reset
	c.mu.Unlock()
	if meta.IsNoMatchError(err) && stale {
		// The mapper may be older than c, and shared (kube.Discovery): a kind it does not know
		// may have been made since, by a CRD another installed. It is asked once more, anew.
		c.ResetMapper()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), versions...)
	}
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, &UnknownKindError{GVK: gvk, Err: err, Unavailable: c.undiscoverable(gvk.GroupVersion())}
		}
		return nil, fmt.Errorf("map %s: %w", gvk, err)
	}
	return m, nil
}

// undiscoverable returns why discovery of gv fails when gv is registered but cannot be discovered
// (an aggregated API whose service is down); nil when it is simply not there, or cannot be asked.
func (c *Client) undiscoverable(gv schema.GroupVersion) error {
	if c.discovery == nil || gv.Group == "" || gv.Version == "" {
		return nil
	}
	_, err := c.discovery.ServerResourcesForGroupVersion(gv.String())
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return err
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
