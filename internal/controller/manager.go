package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/controller/inputs"
	"github.com/berthdev/berth/internal/controller/rollouts"
	"github.com/berthdev/berth/internal/controller/status"
	"github.com/berthdev/berth/internal/controller/tenancy"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/version"
)

// Name is the controller's name: in its events, metrics and leader election lease, and its
// requests' User-Agent.
const Name = "berth-controller"

// UserAgent is the User-Agent of every request the controller makes, its own and those it makes
// as a Release's ServiceAccount, so that an API server's audit log tells them apart from berth's
// commands.
func UserAgent() string { return Name + "/" + version.Version }

// Options configure the controller's manager.
type Options struct {
	// Concurrency is how many Releases are reconciled at once.
	Concurrency int
	// MetricsBindAddress serves Prometheus metrics; "0" serves none.
	MetricsBindAddress string
	// MetricsPlainHTTP serves them over plain HTTP to anyone who reaches the address; by default
	// they are served over HTTPS (a self-signed certificate) to clients whose bearer token the
	// API server authenticates and authorizes for get on the non-resource URL /metrics.
	MetricsPlainHTTP bool
	// HealthProbeBindAddress serves /healthz and /readyz; "0" or empty serves none.
	HealthProbeBindAddress string
	// LeaderElection makes one replica of several act at a time.
	LeaderElection bool
	// LeaderElectionNamespace holds the leader election Lease; empty means the namespace the
	// controller runs in (in a cluster) or Namespace.
	LeaderElectionNamespace string
	// Namespace, when set, is the only namespace whose Releases are reconciled.
	Namespace string
	// WatchLabelSelector, when set, is the label selector of the only Releases reconciled (a
	// shard): the controller neither watches nor caches the others, and its leader election Lease
	// is the shard's own (Shard.LeaseName).
	WatchLabelSelector string
	// CacheDir holds the controller's chart caches; empty means a directory under the user's
	// cache directory.
	CacheDir string
	// Logger receives the controller's logs.
	Logger logr.Logger
	// Identity names this replica in the leases and journals of its operations (its Pod,
	// namespace/name); empty means its host.
	Identity string
	// DefaultServiceAccount is the account a Release that names none acts as; empty means its
	// namespace's default account.
	DefaultServiceAccount string
	// StatusChartOutput lets Release status show what a chart's own code output (a failed hook's
	// logs, a template's fail or required message) in status.blockers[].logTail. That output can
	// carry the release's values, Secrets included, and anyone who may view a Release's namespace
	// reads its status: off, the controller writes none of it.
	StatusChartOutput bool
	// RequireVerified refuses every Release whose chart is not verified before it is released
	// (spec.chart.verify): a tenant cannot opt out.
	RequireVerified bool
	// AllowedSigners and AllowedIssuers, with RequireVerified, are the regular expressions
	// (anchored) a verified chart's signer, and a keyless signer's OIDC issuer, must match:
	// a chart signed by anyone else is refused (VerificationRequired). Empty: any.
	AllowedSigners, AllowedIssuers []string
	// CloudKMSDecryption lets a Release's SOPS values be decrypted with the cloud KMS keys (AWS,
	// GCP, Azure, Vault, Huawei Cloud) of the controller's own cloud identity, which every tenant
	// then borrows: off, only the age keys of a Release's own Secret decrypt.
	CloudKMSDecryption bool
	// NoSecretWatch drops the watch of the metadata of Secrets: a change of a Secret a Release
	// reads (valuesFrom, chart credentials, TLS, keyring, kubeconfig, a chart in a Secret) is then
	// seen at the Release's next reconcile (spec.interval, or a change of the Release) rather
	// than at once, and the controller's own account needs no right on Secrets. RBAC cannot
	// grant a list or watch of their metadata alone: an account that may list Secrets may read
	// their data.
	NoSecretWatch bool
	// KubeConfigReach allows a Release's kubeconfig to skip TLS verification, name a proxy or a
	// plain HTTP server (--allow-kubeconfig-insecure-tls, --allow-kubeconfig-proxy,
	// --allow-kubeconfig-http); by default each is refused (InvalidKubeConfig).
	KubeConfigReach inputs.KubeConfigReach
	// MaxTimeout is the longest spec.timeout granted: a Release asking for more runs with it and
	// says so (ConditionTimeoutCapped); 0 grants any.
	MaxTimeout time.Duration
	// MaxIndexBytes is the largest Helm repository index a Release may fetch; 0 means
	// source.ManyTenantsMaxIndexBytes. Parsing an index allocates some 35 times its size.
	MaxIndexBytes int64
	// StorageDriver is where the releases' records are kept (ParseStorageDriver): "" and
	// release.DriverSecret in Secrets, release.DriverConfigMap in ConfigMaps.
	StorageDriver release.Driver
	// MaxRecordExpansion is the most a release's record (or its parts, or its journal) may
	// expand to once decompressed; 0 means that of release.ControllerExpansion. The decodes
	// under way share twice as much.
	MaxRecordExpansion int64
	// FetchesPerNamespace is how many chart fetches one namespace's Releases may have under way
	// at once, of the controller's four; 0 means DefaultFetchesPerNamespace.
	FetchesPerNamespace int
	// MinFetchRate is the fewest bytes a second a repository's or registry's answer may come at;
	// slower, the fetch is ended and named. 0 allows any rate (up to the fetch's timeouts).
	MinFetchRate int64
	// RenderLimits are the budget of each render of a tenant's chart, run in a renderer process
	// of its own; zero fields take chart.DefaultRenderLimits'.
	RenderLimits chart.RenderLimits
	// RenderSlots is how many renderers run at once; 0 means chart.DefaultRenderSlots.
	RenderSlots int
}

// renderSandbox is the sandbox the controller renders tenants' charts in, with o's limits.
func renderSandbox(o Options) (*chart.Sandbox, error) {
	limits, d := o.RenderLimits, chart.DefaultRenderLimits()
	if limits.Memory <= 0 {
		limits.Memory = d.Memory
	}
	if limits.CPU <= 0 {
		limits.CPU = d.CPU
	}
	if limits.Output <= 0 {
		limits.Output = d.Output
	}
	if limits.Objects <= 0 {
		limits.Objects = d.Objects
	}
	slots := o.RenderSlots
	if slots <= 0 {
		slots = chart.DefaultRenderSlots
	}
	return chart.NewSandbox(limits, slots)
}

// recordExpansion is the controller's bound on what records expand to, with at most max bytes
// for one (0: release.ControllerExpansion's).
func recordExpansion(maxBytes int64) release.Expansion {
	e := release.ControllerExpansion()
	if maxBytes > 0 {
		e.Max, e.Budget = maxBytes, release.NewBudget(2*maxBytes)
	}
	return e
}

// Scheme is the scheme of the controller's clients.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// NewManager returns a manager running the Release controller against the cluster of cfg.
func NewManager(cfg *rest.Config, o Options) (manager.Manager, error) {
	shard, err := ParseShard(o.WatchLabelSelector)
	if err != nil {
		return nil, err
	}
	driver, err := ParseStorageDriver(string(o.StorageDriver))
	if err != nil {
		return nil, err
	}
	signers, err := signerPolicyOf(o)
	if err != nil {
		return nil, err
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = UserAgent()
	// Each request that is not a watch ends, even on a connection that stopped answering.
	kube.BoundRequests(cfg)
	mo := ctrl.Options{
		Scheme:                  scheme,
		Logger:                  o.Logger,
		Metrics:                 metricsOptions(o),
		HealthProbeBindAddress:  o.HealthProbeBindAddress,
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        shard.LeaseName(),
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		LeaderElectionLabels:    map[string]string{v1alpha1.ControllerLabel: shard.ID()},
	}
	if mo.HealthProbeBindAddress == "" {
		mo.HealthProbeBindAddress = "0"
	}
	if o.Namespace != "" {
		mo.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{o.Namespace: {}}}
		if mo.LeaderElectionNamespace == "" {
			mo.LeaderElectionNamespace = o.Namespace
		}
	}
	// What the cache holds of each kind is what the controller reads of it (cachekeep.go): the
	// ServiceAccounts Releases act as, whose existence checkAccount reads there, the ConfigMaps
	// and Secrets Releases read (their metadata, watched), and the Releases; anything else
	// without its managed fields.
	var leader *leadership
	if o.LeaderElection {
		// The lock notes its renewals: a replica that lost the lead writes no status (Leading).
		leader, err = newLeaderLock(cfg, cmp.Or(mo.LeaderElectionNamespace, inClusterNamespace()), shard.LeaseName(), mo.LeaderElectionLabels)
		if err != nil {
			return nil, err
		}
		mo.LeaderElectionResourceLockInterface, mo.RenewDeadline = leader, ptr.To(leaderRenewDeadline)
	}
	mo.Cache.ByObject = cacheByObject(shard)
	viewErr := mayWatchClusterView(cfg)
	if viewErr == nil {
		mo.Cache.ByObject[metadataOf("Namespace")] = cache.ByObject{Transform: keepNamespace}
	}
	mo.Cache.DefaultTransform = cache.TransformStripManagedFields()
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return nil, fmt.Errorf("create controller manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("releases-synced", releasesSynced(mgr.GetCache())); err != nil {
		return nil, err
	}
	if err := mgr.Add(status.ReleaseMetrics(mgr, metricConditions())); err != nil {
		return nil, err
	}
	if o.LeaderElection {
		if err := addPresence(mgr, cfg, shard, cmp.Or(mo.LeaderElectionNamespace, inClusterNamespace()), o, signers); err != nil {
			return nil, err
		}
	}
	dir := o.CacheDir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		dir = filepath.Join(base, "berth-controller")
	}
	charts, err := NewCharts(dir, ChartsOptions{MaxIndexBytes: o.MaxIndexBytes, FetchesPerNamespace: o.FetchesPerNamespace, MinFetchRate: o.MinFetchRate})
	if err != nil {
		return nil, err
	}
	templates, err := renderSandbox(o)
	if err != nil {
		return nil, err
	}
	r := &Reconciler{
		Templates: templates,
		Client:    patchesReleases{mgr.GetClient()},
		Config:    mgr.GetConfig(),
		Recorder:  status.CutNotes{EventRecorder: mgr.GetEventRecorder(Name)},
		Charts:    charts,
		Holder:    holder(o.Identity),
		Uncached:  mgr.GetAPIReader(),
		Accounts:  mgr.GetCache(),
		Releases:  mgr.GetClient(),

		DefaultServiceAccount: o.DefaultServiceAccount,
		StatusChartOutput:     o.StatusChartOutput,
		RequireVerified:       o.RequireVerified,
		CloudKMS:              o.CloudKMSDecryption,
		Signers:               signers,
		KubeConfigReach:       o.KubeConfigReach,
		MaxTimeout:            o.MaxTimeout,
		RecordExpansion:       recordExpansion(o.MaxRecordExpansion),
		Encoder:               release.NewEncoder(),
		Driver:                driver,
	}
	if leader != nil {
		r.Leading = leader.Leads
	}
	if viewErr == nil {
		if r.View, err = watchClusterView(mgr.GetCache()); err != nil {
			return nil, err
		}
	} else {
		o.Logger.Info("each preflight reads as its Release's account", "reason", viewErr.Error())
	}
	if !shard.All() {
		// The Releases depended on may be other shards', which the cache does not hold.
		r.Releases = mgr.GetAPIReader()
	}
	// Started with the manager, so that the first reconcile finds the accounts listed.
	if _, err := mgr.GetCache().GetInformer(context.Background(), metadataOf("ServiceAccount")); err != nil {
		return nil, fmt.Errorf("cache the ServiceAccounts' metadata: %w", err)
	}
	concurrency := max(o.Concurrency, 1)
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.Release{}, referencesIndex, referencesOf); err != nil {
		return nil, fmt.Errorf("index Releases by the objects they read: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.Release{}, dependsOnIndex, dependsOnNames); err != nil {
		return nil, fmt.Errorf("index Releases by the Releases they depend on: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("release").
		For(&v1alpha1.Release{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deleting{}))).
		// The Releases that wait on another: to be installed once it is Ready, to be uninstalled
		// once it is gone.
		Watches(&v1alpha1.Release{}, handler.EnqueueRequestsFromMapFunc(relatedReleases(mgr.GetClient())), builder.WithPredicates(dependencyChanged{})).
		// The ConfigMaps (and below, Secrets) Releases read their chart and values from:
		// metadata only, so that the controller holds no Secret's content.
		Watches(metadataOf("ConfigMap"), handler.EnqueueRequestsFromMapFunc(releasesReading(mgr.GetClient(), "ConfigMap")), builder.OnlyMetadata).
		// The Releases whose chart was fetched off the workers.
		WatchesRawSource(charts.fetches.source()).
		// Names are unique per process; tests run one manager after another.
		// Workers are shared fairly between namespaces: one tenant's many Releases do not make
		// another's wait behind them, and one namespace never holds every worker.
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency, SkipNameValidation: ptr.To(true), NewQueue: tenancy.NewFairQueue(concurrency)})
	if !o.NoSecretWatch {
		b = b.Watches(metadataOf("Secret"), handler.EnqueueRequestsFromMapFunc(releasesReading(mgr.GetClient(), "Secret")), builder.OnlyMetadata)
	}
	err = b.Complete(r)
	if err != nil {
		return nil, fmt.Errorf("create Release controller: %w", err)
	}
	if err := rollouts.Setup(mgr, !o.NoSecretWatch); err != nil {
		return nil, fmt.Errorf("create Rollout controller: %w", err)
	}
	return mgr, nil
}

// addPresence makes the controller findable from the cluster through its leader election Lease
// in namespace (see presence).
func addPresence(mgr manager.Manager, cfg *rest.Config, shard Shard, namespace string, o Options, signers SignerPolicy) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("create the client of the leader election Lease: %w", err)
	}
	return mgr.Add(newPresence(cs.CoordinationV1(), namespace, shard, o.Namespace, o.RequireVerified, signers, o.Logger.WithName("presence")))
}

// metricsOptions serves the metrics as o says: over HTTPS, each request authenticated and
// authorized by the API server (TokenReview, SubjectAccessReview), unless o.MetricsPlainHTTP.
func metricsOptions(o Options) metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.MetricsBindAddress}
	if !o.MetricsPlainHTTP {
		m.SecureServing = true
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return m
}

// deleting passes the update that marks an object for deletion, and no later one: the status
// written while the uninstall runs must not start it again. A change of the spec of a Release
// being deleted (uninstall.disableHooks, say) passes by its generation.
type deleting struct{ predicate.Funcs }

func (deleting) Update(e event.UpdateEvent) bool {
	return e.ObjectOld != nil && e.ObjectNew != nil &&
		e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}

// holder is the controller replica named identity, as the holder of its operations' leases.
func holder(identity string) release.Holder {
	h := release.Self(Name)
	h.Who = h.Host
	if identity != "" {
		h.Who = identity
	}
	return h
}

// releasesSynced is the readiness check: ready once the cache holds every Release, so that a
// replica is not reported ready while it still knows none.
func releasesSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		inf, err := c.GetInformer(req.Context(), &v1alpha1.Release{}, cache.BlockUntilSynced(false))
		if err != nil {
			return err
		}
		if !inf.HasSynced() {
			return errors.New("the cache of Releases has not synced yet")
		}
		return nil
	}
}

// ErrSignersWithoutRequire is an allowed signer or issuer given without RequireVerified: a
// chart that is not verified has no signer to match.
var ErrSignersWithoutRequire = errors.New("allowed signers and issuers apply only when every chart must be verified (RequireVerified): a chart that is not verified has no signer to check")

// signerPolicyOf is the signer policy of o, checked.
func signerPolicyOf(o Options) (SignerPolicy, error) {
	if !o.RequireVerified && len(o.AllowedSigners)+len(o.AllowedIssuers) > 0 {
		return SignerPolicy{}, ErrSignersWithoutRequire
	}
	return NewSignerPolicy(o.AllowedSigners, o.AllowedIssuers)
}
