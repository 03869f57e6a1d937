package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/berthdev/berth/internal/par"
)

// The limits of what one API server's discovery may be, read once a discovery (the server's
// groups, versions and resources, for the REST mapper and a chart's .Capabilities). A server
// another party names (a Release's kubeconfig) could list any number of group versions, each
// read with a request of its own: RemoteDiscoveryLimits. The cluster of a kubeconfig the user
// or the platform gives is bounded too, far above any real cluster: DefaultDiscoveryLimits.
const (
	// MaxDiscoveryGroupVersions bounds the group versions a server another party names lists: a
	// cluster with many CRDs serves a few hundred, devcluster about thirty.
	MaxDiscoveryGroupVersions = 1000
	// MaxDiscoveryBytes bounds the bytes of all the answers of one discovery of such a server
	// together, counted as they are read: a cluster of a thousand group versions serves about
	// one MiB (some 300 bytes a resource), and what is read is decoded, about twice as large,
	// four workers at once.
	MaxDiscoveryBytes = 4 << 20
	// localDiscoveryGroupVersions and localDiscoveryBytes are DefaultDiscoveryLimits'.
	localDiscoveryGroupVersions = 10_000
	localDiscoveryBytes         = 64 << 20
	// discoveryFetches bounds the group versions whose resources are asked at once, when the
	// server does not serve them all in one answer (aggregated discovery).
	discoveryFetches = 8
)

// DiscoveryTooLargeError is a server whose discovery is larger than its limits: it is not read
// further.
type DiscoveryTooLargeError struct {
	// Host is the server's host (and port).
	Host string
	// GroupVersions is how many group versions the server listed, when it listed more than
	// MaxGroupVersions; zero when it is its bytes that are over.
	GroupVersions, MaxGroupVersions int
	// MaxBytes is the limit of the bytes of its answers together, when they passed it.
	MaxBytes int64
}

func (e *DiscoveryTooLargeError) Error() string {
	if e.GroupVersions > 0 {
		return fmt.Sprintf("server %s lists %d API group versions, more than %d, the limit of a cluster's discovery: not read further",
			e.Host, e.GroupVersions, e.MaxGroupVersions)
	}
	return fmt.Sprintf("the discovery answers of server %s are longer than %s together, the limit of a cluster's discovery: not read further",
		e.Host, sizeOf(e.MaxBytes))
}

// DiscoveryLimits are the bounds of one discovery.
type DiscoveryLimits struct {
	GroupVersions int
	Bytes         int64
	// Fetches is how many group versions are asked at once.
	Fetches int
}

// RemoteDiscoveryLimits are the limits of the discovery of a server another party names:
// MaxDiscoveryGroupVersions, MaxDiscoveryBytes and discoveryFetches.
func RemoteDiscoveryLimits() DiscoveryLimits {
	return DiscoveryLimits{GroupVersions: MaxDiscoveryGroupVersions, Bytes: MaxDiscoveryBytes, Fetches: discoveryFetches}
}

// DefaultDiscoveryLimits are the limits of the discovery of a cluster the user or the platform
// names: ten times RemoteDiscoveryLimits' group versions, sixteen times its bytes.
func DefaultDiscoveryLimits() DiscoveryLimits {
	return DiscoveryLimits{GroupVersions: localDiscoveryGroupVersions, Bytes: localDiscoveryBytes, Fetches: discoveryFetches}
}

// boundedDiscovery asks its server's groups and resources within limits: it lists the groups
// (/api, /apis) and refuses more than limits.GroupVersions before it asks any group version,
// asks at most limits.Fetches of them at once, and counts the bytes of every answer together
// (through countDiscovery's transport). It serves them all at once, as aggregated discovery
// does, so that client-go's cache asks nothing more.
type boundedDiscovery struct {
	discovery.DiscoveryInterfaces
	limits DiscoveryLimits
}

// boundDiscovery is d asked within limits.
func boundDiscovery(d discovery.DiscoveryInterfaces, limits DiscoveryLimits) *boundedDiscovery {
	return &boundedDiscovery{DiscoveryInterfaces: d, limits: limits}
}

func (b *boundedDiscovery) GroupsAndMaybeResources() (*metav1.APIGroupList, map[schema.GroupVersion]*metav1.APIResourceList, map[schema.GroupVersion]error, error) {
	return b.GroupsAndMaybeResourcesWithContext(context.Background())
}

func (b *boundedDiscovery) GroupsAndMaybeResourcesWithContext(ctx context.Context) (*metav1.APIGroupList, map[schema.GroupVersion]*metav1.APIResourceList, map[schema.GroupVersion]error, error) {
	host := hostOfClient(b.DiscoveryInterfaces)
	budget := &discoveryBudget{host: host, limit: b.limits.Bytes}
	ctx = context.WithValue(ctx, discoveryBudgetKey{}, budget)
	groups, resources, failed, err := b.groups(ctx)
	if err != nil {
		return nil, nil, nil, budget.or(err)
	}
	var gvs []schema.GroupVersion
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			gvs = append(gvs, schema.GroupVersion{Group: g.Name, Version: v.Version})
		}
	}
	if len(gvs) > b.limits.GroupVersions {
		return nil, nil, nil, &DiscoveryTooLargeError{Host: host, GroupVersions: len(gvs), MaxGroupVersions: b.limits.GroupVersions}
	}
	if failed == nil {
		failed = map[schema.GroupVersion]error{}
	}
	if resources != nil {
		return groups, resources, failed, nil
	}
	resources, err = b.fetch(ctx, gvs, failed)
	if err != nil {
		return nil, nil, nil, budget.or(err)
	}
	return groups, resources, failed, nil
}

// groups is the server's groups, and their resources when it serves them in the same answers.
func (b *boundedDiscovery) groups(ctx context.Context) (*metav1.APIGroupList, map[schema.GroupVersion]*metav1.APIResourceList, map[schema.GroupVersion]error, error) {
	if ad, ok := b.DiscoveryInterfaces.(discovery.AggregatedDiscoveryInterfaceWithContext); ok {
		return ad.GroupsAndMaybeResourcesWithContext(ctx)
	}
	groups, err := b.DiscoveryInterfaces.ServerGroupsWithContext(ctx)
	return groups, nil, nil, err
}

// fetch asks the resources of every group version of gvs, limits.Fetches at once; a group
// version that failed is in failed, as client-go keeps it. Once the budget is spent, the ones
// not yet asked are not asked.
func (b *boundedDiscovery) fetch(ctx context.Context, gvs []schema.GroupVersion, failed map[schema.GroupVersion]error) (map[schema.GroupVersion]*metav1.APIResourceList, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lists := make([]*metav1.APIResourceList, len(gvs))
	indices := make([]int, len(gvs))
	for i := range indices {
		indices[i] = i
	}
	errs := par.Each(ctx, indices, b.limits.Fetches, func(ctx context.Context, i int) error {
		l, err := b.DiscoveryInterfaces.ServerResourcesForGroupVersionWithContext(ctx, gvs[i].String())
		if large := new(DiscoveryTooLargeError); errors.As(err, &large) {
			cancel(large)
		}
		lists[i] = l
		return err
	})
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	resources := make(map[schema.GroupVersion]*metav1.APIResourceList, len(gvs))
	for i, gv := range gvs {
		if errs[i] != nil {
			failed[gv] = errs[i]
		}
		if lists[i] != nil {
			resources[gv] = lists[i]
		}
	}
	return resources, nil
}

// hostOfClient is the host of d's server, or "" when d has no REST client.
func hostOfClient(d discovery.DiscoveryInterfaces) string {
	rc, ok := d.RESTClient().(*rest.RESTClient)
	if !ok || rc == nil {
		return ""
	}
	if u := rc.Get().URL(); u != nil {
		return u.Host
	}
	return ""
}

// discoveryBudgetKey carries a *discoveryBudget in the context of a discovery's requests.
type discoveryBudgetKey struct{}

// discoveryBudget counts the bytes of one discovery's answers together.
type discoveryBudget struct {
	host  string
	limit int64
	read  atomic.Int64
}

// take counts n more bytes read, and fails once more than the limit were.
func (b *discoveryBudget) take(n int) error {
	if b.read.Add(int64(n)) > b.limit {
		return &DiscoveryTooLargeError{Host: b.host, MaxBytes: b.limit}
	}
	return nil
}

// or is err, unless the budget was spent: then that is why, whatever err says (a request that
// was cut short by it, say).
func (b *discoveryBudget) or(err error) error {
	if large := new(DiscoveryTooLargeError); b.read.Load() > b.limit && !errors.As(err, &large) {
		return fmt.Errorf("%w (%v)", &DiscoveryTooLargeError{Host: b.host, MaxBytes: b.limit}, err)
	}
	return err
}

// countDiscovery makes cfg's clients count the bytes of the answers of a discovery's requests
// against its budget (DiscoveryLimits.Bytes), as they are read: past it, reading fails with a
// *DiscoveryTooLargeError. Other requests are not counted.
func countDiscovery(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &discoveryCounter{next: rt} })
}

type discoveryCounter struct{ next http.RoundTripper }

// WrappedRoundTripper lets client-go see through the wrap.
func (t *discoveryCounter) WrappedRoundTripper() http.RoundTripper { return t.next }

func (t *discoveryCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	budget, ok := req.Context().Value(discoveryBudgetKey{}).(*discoveryBudget)
	if err != nil || !ok {
		return resp, err
	}
	resp.Body = &countedBody{ReadCloser: resp.Body, budget: budget}
	return resp, nil
}

// countedBody takes what is read of it from its budget.
type countedBody struct {
	io.ReadCloser
	budget *discoveryBudget
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if berr := b.budget.take(n); berr != nil {
		return n, berr
	}
	return n, err
}
