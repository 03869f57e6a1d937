package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

// impersonate returns a copy of cfg that acts as the ServiceAccount name of namespace ns. No
// groups are named: the API server gives an impersonated ServiceAccount the groups of its own
// token, so the controller needs the right to impersonate serviceaccounts and not groups.
func impersonate(cfg *rest.Config, ns, name string) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:%s", ns, name)}
	return out
}

// clientsFor returns the clients with which every cluster call for d's release is made: the
// Release's ServiceAccount's, in the target namespace, or, with spec.kubeConfig, those of that
// kubeconfig's cluster (remoteClients). local are the clients of the Release's account in the
// controller's cluster, which read its kubeconfig, values and chart; without spec.kubeConfig they
// are clients. named says the Release names its account (in spec.serviceAccountName). An account
// that does not exist is an *AccountNotFoundError, and no clients.
func (r *Reconciler) clientsFor(ctx context.Context, d *desired, named bool) (clients, local *kube.Clients, err error) {
	if err := r.checkAccount(ctx, d, named); err != nil {
		return nil, nil, err
	}
	local, err = r.impersonated(d)
	if err != nil || d.Remote == nil {
		return local, local, err
	}
	clients, err = r.remoteClients(ctx, d, local)
	return clients, local, err
}

// uninstallClients returns the clients of the uninstall of d's release, as clientsFor does,
// except that an account that went with its namespace, which is being deleted, after the
// release was made as it, is impersonated still: the uninstall runs with the rights that
// outlive the namespace (a ClusterRoleBinding), and the Release is let go when there are none.
// A missing account is impersonated only when the Release's spec did not change since its last
// install or upgrade, which found the account there (releasedAs); otherwise a name the release
// was never made as, whose RoleBindings outlived it, would act again: a StaleAccountError.
//
// With spec.kubeConfig, a kubeconfig that can no longer be read because it went with the
// Release's namespace (its Secret, or the account that reads it) is replaced by the clients
// last built from it (keptClients).
func (r *Reconciler) uninstallClients(ctx context.Context, rel *v1alpha1.Release, d *desired, named bool) (*kube.Clients, error) {
	if d.Remote != nil {
		clients, _, err := r.clientsFor(ctx, d, named)
		if lostWithNamespace(err) && r.namespaceGoing(ctx, rel) {
			return r.keptClients(ctx, d, err)
		}
		return clients, err
	}
	err := r.checkAccount(ctx, d, named)
	if missing := new(AccountNotFoundError); errors.As(err, &missing) && r.accountGone(ctx, rel, err) {
		if !releasedAs(rel) {
			return nil, &StaleAccountError{Account: *missing, Generation: rel.Generation, Attempted: rel.Status.LastAttemptedGeneration}
		}
		err = nil
	}
	if err != nil {
		return nil, err
	}
	return r.impersonated(d)
}

// releasedAs says the Release's spec, its account included, is the one of its last install or
// upgrade (which checked that the account existed): the spec did not change since, but for the
// one generation its deletion adds.
func releasedAs(rel *v1alpha1.Release) bool {
	attempted := rel.Status.LastAttemptedGeneration
	if attempted <= 0 {
		return false
	}
	if rel.DeletionTimestamp.IsZero() {
		return attempted == rel.Generation
	}
	return attempted == rel.Generation || attempted == rel.Generation-1
}

// StaleAccountError says the ServiceAccount a Release being deleted names does not exist, and
// the Release's spec changed since its last install or upgrade: the account is not impersonated,
// as RoleBindings left behind by a deleted account would still grant its name rights, and the
// release is not uninstalled.
type StaleAccountError struct {
	Account AccountNotFoundError
	// Generation is the Release's; Attempted, that of its last install or upgrade.
	Generation, Attempted int64
}

func (e *StaleAccountError) Error() string {
	return fmt.Sprintf("ServiceAccount %s/%s does not exist, and the Release's spec changed since its last install or upgrade (generation %d, now %d): an account the release was not made as is never impersonated",
		e.Account.Namespace, e.Account.Name, e.Attempted, e.Generation)
}

func (e *StaleAccountError) Unwrap() error { return &e.Account }

// impersonated returns the clients of d's account, in the target namespace, without checking
// that the account exists. They read discovery through the controller's cluster's shared
// discovery (sharedDiscovery).
func (r *Reconciler) impersonated(d *desired) (*kube.Clients, error) {
	c, err := kube.NewClients(impersonate(r.Config, d.Namespace, d.ServiceAccount), d.TargetNamespace)
	if err != nil {
		return nil, err
	}
	disc, err := sharedDiscovery(r.Config)
	if err != nil {
		return nil, err
	}
	return c.WithDiscovery(disc), nil
}

// discoveryAge is how long the shared discovery of a cluster is kept: what others change there
// (a CRD installed by another tool, an aggregated API come back) is seen in the charts'
// Capabilities within it. A kind the mapper does not know is asked for anew at once
// (cluster.Client.Mapping), and CRDs a release installs reset it (engine.Cluster.ResetMapper).
const discoveryAge = 30 * time.Second

// discoveries are the shared discoveries of the clusters the controller acts in as its
// Releases' accounts, by discoveryKey.
var discoveries sync.Map

// discoveryKey names a cluster: its API server's address and the authority its certificate is
// checked against.
type discoveryKey struct {
	host, caFile, caData string
}

// sharedDiscovery returns the discovery of the cluster of cfg that every reconcile of a Release
// in it reads, instead of asking the API server anew as each Release's account: 5 requests a
// reconcile. It asks as the controller itself. A cache shared by tenants must hold only what
// each may read: discovery (the API server's version, groups and resources) is readable by
// every authenticated user (the system:discovery and system:public-info-viewer roles, bound to
// system:authenticated by default), and it is the same whoever asks, so one cache per cluster
// (API server and certificate authority) tells no tenant anything it could not ask for itself.
// It is forgotten after discoveryAge, when a release installs CRDs, and when a kind is not found.
func sharedDiscovery(cfg *rest.Config) (*kube.Discovery, error) {
	k := discoveryKey{host: cfg.Host, caFile: cfg.CAFile, caData: string(cfg.CAData)}
	if d, ok := discoveries.Load(k); ok {
		disc := d.(*kube.Discovery)
		disc.ResetOlderThan(discoveryAge)
		return disc, nil
	}
	own := rest.CopyConfig(cfg)
	own.Impersonate = rest.ImpersonationConfig{}
	c, err := kube.NewClients(own, "")
	if err != nil {
		return nil, err
	}
	d, _ := discoveries.LoadOrStore(k, c.Discovery)
	return d.(*kube.Discovery), nil
}

// lastRecord reads the state the release's newest Helm record says (lifecycle.StateOf): its
// status, with no journal or lease read.
func (r *Reconciler) lastRecord(ctx context.Context, clients *kube.Clients, name string) (lifecycle.State, error) {
	store, err := r.store(clients)
	if err != nil {
		return lifecycle.State{}, err
	}
	s, err := lifecycle.ReadState(ctx, store, name)
	if err != nil {
		return lifecycle.State{}, fmt.Errorf("read the records of release %s in namespace %s: %w", name, clients.Namespace, err)
	}
	return s, nil
}

// store is the store of the releases of clients' namespace on r.Driver, reached through clients
// (as the Release's account), which decodes records and journals within r.RecordExpansion and
// encodes records with a fork of r.Encoder: one bulky record at a time with every reconcile, and
// what it keeps of the records it encodes gone with the store.
func (r *Reconciler) store(clients *kube.Clients) (release.Store, error) {
	return release.Open(r.Driver, clients.Client, clients.Namespace, r.RecordExpansion, r.Encoder.Fork())
}

// reasonFor is the Ready reason of deployed revision version.
func reasonFor(version int) string {
	if version == 1 {
		return ReasonInstallSucceeded
	}
	return ReasonUpgradeSucceeded
}

// ownNamespace knows that the Release's own namespace exists (the Release is in it), so that an
// account whose rights end at its namespace can release into it; other namespaces are looked up
// with the account's rights.
type ownNamespace struct {
	lifecycle.Namespaces
	name string
}

func (n ownNamespace) Exists(ctx context.Context, name string) (bool, error) {
	if name == n.name {
		return true, nil
	}
	return n.Namespaces.Exists(ctx, name)
}

// depsFor returns the collaborators of an operation on d's release, made with clients, its
// records, journal and lease those of r.store.
func (r *Reconciler) depsFor(d *desired, clients *kube.Clients, events func(engine.Event)) (lifecycle.Deps, error) {
	store, err := r.store(clients)
	if err != nil {
		return lifecycle.Deps{}, err
	}
	deps := lifecycle.NewDeps(clients, store, r.Holder, events)
	if d.Remote == nil {
		// The Release's namespace may not exist in another cluster.
		deps.Namespaces = ownNamespace{Namespaces: deps.Namespaces, name: d.Namespace}
	}
	deps.HealthChecks = d.HealthChecks
	deps.Templates = r.Templates
	return deps, nil
}
