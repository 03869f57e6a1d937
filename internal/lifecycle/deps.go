package lifecycle

import (
	"context"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/doctor"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// Cluster is what operations need of the cluster.
type Cluster interface {
	engine.Cluster // apply, delete, wait and diagnose
	Normalize(obj *unstructured.Unstructured, defaultNamespace string) error
	Get(ctx context.Context, id resource.Identity) (*unstructured.Unstructured, error)
	// Live returns the metadata of the objects of ids that exist.
	Live(ctx context.Context, ids []resource.Identity) (map[resource.Identity]*unstructured.Unstructured, error)
	// LiveObjects returns the objects of objs that exist, whole, with as many requests as Live.
	LiveObjects(ctx context.Context, objs []*unstructured.Unstructured) (map[resource.Identity]*unstructured.Unstructured, error)
	// AdoptFields makes berth the owner of the fields Helm set on an object.
	AdoptFields(ctx context.Context, id resource.Identity) error
	// Dependents lists the objects that name id as their owner.
	Dependents(ctx context.Context, id resource.Identity) []cluster.DependentReport
	// RunHook creates a hook and follows it to its outcome.
	RunHook(ctx context.Context, obj *unstructured.Unstructured, opts cluster.HookOptions) (cluster.HookRun, error)
	// WatchWindow watches targets, ready, for opts.For (a watch step): a regression ends it with a
	// *cluster.RegressionError.
	WatchWindow(ctx context.Context, targets []resource.Identity, opts cluster.WindowOptions, progress cluster.Progress) error
}

// Deps are an operation's collaborators. An operation starts with a copy of them and changes
// nothing of its caller's; what it owns as it goes lives in its own value (operation).
type Deps struct {
	Cluster Cluster
	// Store keeps the releases' records (release.Open); NewDeps takes Journals and Leases from it.
	Store release.Store
	// Namespaces creates and removes the release namespace (--create-namespace).
	Namespaces Namespaces
	// Events is told of the engine's progress; may be nil.
	Events func(engine.Event)
	// FollowHookLogs tells Events each line a hook's containers write while the hook runs
	// (HookLogLine), for a view that shows them as they come. It costs a watch of each Job
	// hook's Pods and a log stream for each container.
	FollowHookLogs bool
	// Preflight checks the cluster for what would block operation op on a release, given the
	// requests its plan will make, before the operation changes anything (berth doctor's
	// checks); an error stops the operation. May be nil.
	Preflight func(ctx context.Context, op release.Operation, name string, reqs []doctor.Request) error
	// PreflightAhead, when set with Preflight, is called once an operation that will run its
	// preflight begins to read the cluster for its plan: it may start what Preflight reads, so
	// that the preflight, which needs the plan, waits for no request of its own.
	PreflightAhead func(ctx context.Context, op release.Operation)
	// Precondition, when set, is checked once an operation holds the release's lease, before it
	// does or writes anything: an error stops the operation as it is. A caller that decided what
	// to do from what it read before the lease (a controller) checks here that it still holds.
	Precondition func(ctx context.Context) error
	// Lookup is the cluster that templates read with lookup while an install or upgrade renders
	// (not with a client dry run, as in Helm); nil renders offline.
	Lookup *rest.Config
	// Templates runs the templates of each render; nil runs them in this process. A controller
	// renders tenants' charts in a *chart.Sandbox.
	Templates chart.TemplateRunner
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// HealthChecks judge the readiness of the objects of their kinds that their readiness
	// annotations do not (a Release's spec.healthChecks), in every wait of every operation; nil:
	// the built-in rules.
	HealthChecks *readiness.Checks

	// Leases guard each release against concurrent operations; nil runs without.
	Leases Leases
	// Journals record each operation's progress so that an interrupted one can be resumed; nil
	// runs without.
	Journals JournalStore
	// Holder says who runs the operations, for the lease and the journal.
	Holder release.Holder
	// JournalWritten is told the count of journal writes after each one; may be nil. Fault
	// injection tests use it to stop the process at a chosen point.
	JournalWritten func(n int)
}

// Namespaces manages namespaces.
type Namespaces interface {
	Exists(ctx context.Context, name string) (bool, error)
	Create(ctx context.Context, name string) error
	Delete(ctx context.Context, name string) error
}

// start returns the operation on release name, made with d, that a signal asks to stop (stop
// ending): it stops at its next safe point, and its waits on the cluster are cut short
// (interruptible). It keeps the release's journal in d.Journals.
func (d Deps) start(name string, stop context.Context) *operation {
	return d.operationOn(name, stop, d.Journals)
}

// dryRun returns the operation of a dry run on release name: it keeps no journal, holds no lease
// and stops only at its deadline.
func (d Deps) dryRun(name string) *operation {
	return d.operationOn(name, nil, nil)
}

// operationOn returns an operation on release name, made with d, whose session stops on stop
// (nil: only at its deadline) and keeps the release's journal in journals (nil: none).
func (d Deps) operationOn(name string, stop context.Context, journals JournalStore) *operation {
	o := &operation{Deps: d, runs: &runs{}, session: session{
		name: name, holder: d.Holder, clock: d.now, emit: d.emitter(), journalWritten: d.JournalWritten,
		stop: stop, jstore: journals,
	}}
	if stop != nil {
		o.Cluster = interruptible{Cluster: d.Cluster, stop: stop}
	}
	return o
}

func (d Deps) now() time.Time {
	if d.Now == nil {
		return time.Now()
	}
	return d.Now()
}

// NewDeps returns the collaborators of operations on the releases of store's namespace, made
// with clients (and so with their identity), run by holder: the records, journals and leases are
// store's (release.Open), which clients reach; events, which may be nil, is told of the engine's
// progress.
func NewDeps(clients *kube.Clients, store release.Store, holder release.Holder, events func(engine.Event)) Deps {
	d := Deps{
		Cluster:    cluster.New(clients.Dynamic, clients.Mapper).WithPodLogs(clients.Client.CoreV1()).WithMetadata(clients.Metadata).WithDiscovery(clients.Client.Discovery()),
		Store:      store,
		Namespaces: cluster.Namespaces{Client: clients.Client},
		Events:     events,
		Lookup:     clients.Config,
		Holder:     holder,
	}
	// A nil pointer in an interface would not read as "none".
	if j := store.Journals(); j != nil {
		d.Journals = j
	}
	if l := store.Leases(); l != nil {
		d.Leases = l
	}
	return d
}

// Capabilities returns the capabilities of the cluster of clients (its version and the API
// versions it serves), for rendering.
func Capabilities(ctx context.Context, clients *kube.Clients) (*common.Capabilities, error) {
	var disc discovery.DiscoveryInterface = clients.Client.Discovery()
	if clients.Discovery != nil {
		disc = clients.Discovery.Client()
	}
	kubeVersion, apiVersions, err := cluster.ServerCapabilities(ctx, disc)
	if err != nil {
		return nil, err
	}
	caps, err := chart.Capabilities(kubeVersion, nil)
	if err != nil {
		return nil, err
	}
	caps.APIVersions = common.VersionSet(apiVersions)
	return caps, nil
}
