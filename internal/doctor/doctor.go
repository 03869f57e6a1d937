package doctor

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// Cluster is what the checks read.
type Cluster struct {
	Dynamic   dynamic.Interface
	Metadata  metadata.Interface
	Discovery discovery.DiscoveryInterface
	// Mapper maps kinds to resources, for matching requests to webhooks' rules.
	Mapper meta.RESTMapper
	// Backend names a webhook's backend and says whether it can answer.
	Backend func(ctx context.Context, cc admissionv1.WebhookClientConfig) (string, bool)
	// Releases reads the release records of a namespace ("" for every namespace).
	Releases func(namespace string) release.Reader
	// Footprints measures what the release records of a namespace ("" for every namespace)
	// take in the cluster, without reading what they hold; nil leaves out the checks of their
	// sizes and parts.
	Footprints func(ctx context.Context, namespace string) (*release.Footprints, error)
	// LeaseHolder says who holds the lease of release name in namespace and whether it is live.
	LeaseHolder func(ctx context.Context, namespace, name string) (*release.Holder, bool, error)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Ahead, when set, are the reads of a Preflight started before it (ReadAhead); a
	// Preflight of another operation or namespace reads again.
	Ahead *Ahead
}

// Options say what to check.
type Options struct {
	// Namespace limits the namespaced checks to one namespace; "" checks every namespace.
	Namespace string
	// Release limits the release checks to one release (of Namespace).
	Release string

	// planned says requests are the requests of the operation checked: the webhook and
	// APIService checks report only what those requests meet.
	planned  bool
	requests []Request
}

// Run runs every check and returns what they found. It never fails: what it may not read is a
// finding too.
func Run(ctx context.Context, c Cluster, o Options) Report {
	r := &run{Cluster: c, opts: o}
	if r.Now == nil {
		r.Now = time.Now
	}
	if o.Release != "" {
		r.opts.requests, r.opts.planned = r.releaseRequests(ctx)
	}
	r.webhooks(ctx)
	r.apiServices(ctx)
	r.conversionWebhooks(ctx)
	r.namespaces(ctx)
	r.stuckObjects(ctx)
	r.releases(ctx)
	r.records(ctx)
	r.shards(ctx)
	r.pdbs(ctx)
	rep := Report{Scope: o.scope(), Findings: r.findings}
	if rep.Findings == nil {
		rep.Findings = []Finding{}
	}
	rep.sort()
	return rep
}

func (o Options) scope() string {
	switch {
	case o.Release != "":
		return fmt.Sprintf("release %s in namespace %s", o.Release, o.Namespace)
	case o.Namespace != "":
		return "namespace " + o.Namespace
	default:
		return "cluster"
	}
}

type run struct {
	Cluster
	opts     Options
	findings []Finding
	// namespacesRead are the namespaces read, by name: the checks that need one read it once.
	namespacesRead map[string]namespaceRead
	// listsRead are the lists of every namespace read ahead, by resource (prefetch).
	listsRead map[schema.GroupVersionResource]listRead
}

// listRead is a list as it was read ahead, or why it could not be.
type listRead struct {
	list *unstructured.UnstructuredList
	err  error
}

// prefetch reads at once, each in a request of its own, the lists of every namespace of gvrs and
// the namespaces names, for the checks that read them one after another: what the checks would
// wait for in turn is waited for once.
func (r *run) prefetch(ctx context.Context, gvrs []schema.GroupVersionResource, names ...string) {
	r.take(readAll(ctx, r.Dynamic, gvrs, names))
}

// take makes reads what the checks read of their lists and namespaces.
func (r *run) take(rd reads) {
	r.listsRead = rd.lists
	if r.namespacesRead == nil {
		r.namespacesRead = map[string]namespaceRead{}
	}
	for name, got := range rd.namespaces {
		r.namespacesRead[name] = got
	}
}

// reads are lists of every namespace and namespaces, read at once.
type reads struct {
	lists      map[schema.GroupVersionResource]listRead
	namespaces map[string]namespaceRead
}

// readAll reads the lists of every namespace of gvrs and the namespaces names, each in a
// request of its own, at once.
func readAll(ctx context.Context, dyn dynamic.Interface, gvrs []schema.GroupVersionResource, names []string) reads {
	lists := make([]listRead, len(gvrs))
	namespaces := make([]namespaceRead, len(names))
	var wg sync.WaitGroup
	for i, gvr := range gvrs {
		wg.Go(func() {
			lists[i].list, lists[i].err = dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		})
	}
	for i, name := range names {
		wg.Go(func() {
			namespaces[i].obj, namespaces[i].err = dyn.Resource(namespaceGVR).Get(ctx, name, metav1.GetOptions{})
		})
	}
	wg.Wait()
	rd := reads{lists: make(map[schema.GroupVersionResource]listRead, len(gvrs)), namespaces: make(map[string]namespaceRead, len(names))}
	for i, gvr := range gvrs {
		rd.lists[gvr] = lists[i]
	}
	for i, name := range names {
		rd.namespaces[name] = namespaces[i]
	}
	return rd
}

// namespaceRead is a namespace as it was read, or why it could not be.
type namespaceRead struct {
	obj *unstructured.Unstructured
	err error
}

// namespace reads the namespace name once a run.
func (r *run) namespace(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	if got, ok := r.namespacesRead[name]; ok {
		return got.obj, got.err
	}
	obj, err := r.Dynamic.Resource(namespaceGVR).Get(ctx, name, metav1.GetOptions{})
	if r.namespacesRead == nil {
		r.namespacesRead = map[string]namespaceRead{}
	}
	r.namespacesRead[name] = namespaceRead{obj: obj, err: err}
	return obj, err
}

func (r *run) add(f Finding) { r.findings = append(r.findings, f) }

// unreadable records that the checks could not read a kind of object: a missing permission is
// named as such, any other error as it is. A kind is recorded once per namespace.
func (r *run) unreadable(gvr schema.GroupVersionResource, kind, namespace string, err error) {
	what := gvr.Resource
	if gvr.Group != "" {
		what += "." + gvr.Group
	}
	where := ""
	if namespace != "" {
		where = " in namespace " + namespace
	}
	f := Finding{
		Severity: Warning, Check: "permission",
		Object:  resource.Identity{Group: gvr.Group, Kind: kind, Namespace: namespace},
		Problem: fmt.Sprintf("cannot list %s%s: %v", what, where, err),
		Breaks:  "what would be found there is not checked",
		Fix:     fmt.Sprintf("run berth doctor as a user who may list %s", what),
	}
	if !apierrors.IsForbidden(err) {
		f.Check = "read"
		f.Fix = "run berth doctor again once the API server answers"
	}
	for _, g := range r.findings {
		if g.Check == f.Check && g.Object == f.Object {
			return
		}
	}
	r.add(f)
}

// age says how long ago t was, roughly.
func (r *run) age(t time.Time) string {
	d := r.Now().Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// list joins up to max names, saying how many more there are.
func list(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}
