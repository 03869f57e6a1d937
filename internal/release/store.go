package release

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	helmrelease "helm.sh/helm/v4/pkg/release"
	relutil "helm.sh/helm/v4/pkg/release/v1/util"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
)

// Reader reads the revisions of releases.
type Reader interface {
	// Get returns one revision of a release.
	Get(ctx context.Context, name string, version int) (*Release, error)
	// Last returns the newest revision of a release, whatever its status.
	Last(ctx context.Context, name string) (*Release, error)
	// History returns every recorded revision of a release, oldest first.
	History(ctx context.Context, name string) ([]*Release, error)
	// Deployed returns the newest deployed revision of a release.
	Deployed(ctx context.Context, name string) (*Release, error)
	// List returns the newest revision of each release that matches opts.
	List(ctx context.Context, opts ListOptions) ([]*Release, error)
}

// Writer records revisions.
type Writer interface {
	// Create records a new revision; it fails with ErrExists if the revision is recorded.
	Create(ctx context.Context, rel *Release) error
	// Update replaces a recorded revision.
	Update(ctx context.Context, rel *Release) error
	// Delete removes one revision and returns what it held.
	Delete(ctx context.Context, name string, version int) (*Release, error)
	// Prune deletes the oldest revisions until at most max remain, never the deployed one, and
	// returns the versions it deleted.
	Prune(ctx context.Context, name string, max int) ([]int, error)
	// Purge deletes every revision of a release and returns the versions it deleted.
	Purge(ctx context.Context, name string) ([]int, error)
}

// Store reads and writes the revisions of the releases of one namespace.
type Store interface {
	Reader
	Writer
	// Namespace is the namespace whose releases the store holds.
	Namespace() string
}

// HelmStore keeps revisions in Helm's format: in Secrets (Helm's default), in ConfigMaps, or in
// memory, as HELM_DRIVER chooses for helm. It reads them through Helm's own storage drivers and
// writes them as those drivers do (encodeRecord).
type HelmStore struct {
	// driver returns Helm's driver over the records of namespace ("" for all namespaces),
	// making its API calls with ctx.
	driver func(ctx context.Context, namespace string) driver.Driver
	// records reaches the objects that hold the records of namespace without Helm's driver: to
	// write them, and to list and delete them without decoding each.
	records   func(namespace string) recordObjects
	namespace string
	// kind is the kind of the objects that hold the records: Secret or ConfigMap; "" in memory.
	kind string
}

var _ Store = (*HelmStore)(nil)

// NewSecretStore returns the store of the releases of namespace, kept as Secrets through secrets
// (a clientset's CoreV1()).
func NewSecretStore(secrets typedcorev1.SecretsGetter, namespace string) *HelmStore {
	return &HelmStore{namespace: namespace, driver: func(ctx context.Context, ns string) driver.Driver {
		return driver.NewSecrets(ctxSecrets{SecretInterface: secrets.Secrets(ns), ctx: ctx})
	}, records: func(ns string) recordObjects { return secretRecords(secrets.Secrets(ns)) }, kind: "Secret"}
}

// NewConfigMapStore returns the store of the releases of namespace, kept as ConfigMaps through
// configMaps (a clientset's CoreV1()), as Helm's configmap driver keeps them.
func NewConfigMapStore(configMaps typedcorev1.ConfigMapsGetter, namespace string) *HelmStore {
	return &HelmStore{namespace: namespace, driver: func(ctx context.Context, ns string) driver.Driver {
		return driver.NewConfigMaps(ctxConfigMaps{ConfigMapInterface: configMaps.ConfigMaps(ns), ctx: ctx})
	}, records: func(ns string) recordObjects { return configMapRecords(configMaps.ConfigMaps(ns)) }, kind: "ConfigMap"}
}

// Drivers are the names HELM_DRIVER takes, as helm takes them.
const (
	DriverSecret    = "secret"
	DriverConfigMap = "configmap"
	DriverMemory    = "memory"
)

// UnknownDriverError is a storage driver name helm does not know.
type UnknownDriverError struct{ Name string }

func (e *UnknownDriverError) Error() string {
	return fmt.Sprintf("unknown release storage driver %q: use %s, %s or %s", e.Name, DriverSecret, DriverConfigMap, DriverMemory)
}

// NewStore returns the store of the releases of namespace on the driver name ("" or "secret(s)"
// for Secrets, "configmap(s)", "memory"), as helm chooses its driver from HELM_DRIVER. A memory
// store lives as long as the process.
func NewStore(name string, core typedcorev1.CoreV1Interface, namespace string) (*HelmStore, error) {
	switch name {
	case "", DriverSecret, "secrets":
		return NewSecretStore(core, namespace), nil
	case DriverConfigMap, "configmaps":
		return NewConfigMapStore(core, namespace), nil
	case DriverMemory:
		return NewMemoryStore(namespace), nil
	default:
		return nil, &UnknownDriverError{Name: name}
	}
}

// In returns the store of another namespace on the same backend.
func (s *HelmStore) In(namespace string) *HelmStore {
	return &HelmStore{driver: s.driver, records: s.records, namespace: namespace, kind: s.kind}
}

// RecordObject is the object that holds revision version of release name with status, as Helm's
// driver writes it (name, type and Helm's labels, without the record itself); nil for a store that
// keeps its records outside the cluster. The preflight matches webhooks against it.
func (s *HelmStore) RecordObject(name string, version int, status Status) *unstructured.Unstructured {
	if s.kind == "" {
		return nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind(s.kind)
	obj.SetNamespace(s.namespace)
	obj.SetName(fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, version))
	obj.SetLabels(withHelmLabels(map[string]string{}, name, version, status))
	if s.kind == "Secret" {
		obj.Object["type"] = "helm.sh/release.v1"
	}
	return obj
}

// Namespace returns the namespace whose releases the store holds.
func (s *HelmStore) Namespace() string { return s.namespace }

// storage returns Helm's storage over the records of namespace ("" for all namespaces), making
// its API calls with ctx and logging nothing.
func (s *HelmStore) storage(ctx context.Context, namespace string) *storage.Storage {
	d := s.driver(ctx, namespace)
	if l, ok := d.(interface{ SetLogger(slog.Handler) }); ok {
		l.SetLogger(slog.DiscardHandler)
	}
	return storage.Init(d)
}

func (s *HelmStore) notFound(name string, version int, err error) error {
	return &NotFoundError{Name: name, Namespace: s.namespace, Version: version, Err: err}
}

// Get returns one revision of a release.
func (s *HelmStore) Get(ctx context.Context, name string, version int) (*Release, error) {
	r, err := s.storage(ctx, s.namespace).Get(name, version)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, s.notFound(name, version, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: get revision %d: %w", s.namespace, name, version, err)
	}
	return toV1(r)
}

// Last returns the newest revision of a release, whatever its status. It decodes that record
// alone, found by the version label Helm's driver writes on each: a release's records are mostly
// its chart and manifest, gzipped, and an operation reads the newest one at every decision.
func (s *HelmStore) Last(ctx context.Context, name string) (*Release, error) {
	records, err := s.recordsOf(ctx, name)
	if err != nil {
		return nil, err
	}
	var newest *recordObject
	for i, r := range records {
		if r.version <= 0 {
			return s.lastOfHistory(ctx, name) // a record without Helm's version label
		}
		if newest == nil || r.version > newest.version {
			newest = &records[i]
		}
	}
	if newest == nil {
		return nil, s.notFound(name, 0, ErrNotFound)
	}
	rel, err := s.Get(ctx, name, newest.version)
	if errors.Is(err, ErrNotFound) {
		return s.lastOfHistory(ctx, name) // deleted since the list: read what is there now
	}
	if err != nil {
		return nil, err
	}
	// As Helm's driver lists records: with every label of the object that holds it, Helm's own
	// (owner, status, version, ...) included, which helm get metadata prints.
	rel.Labels = newest.labels
	return rel, nil
}

// recordsOf lists the objects that hold the records of release name, as Helm's driver labels
// them (owner=helm, name=NAME), without decoding any.
func (s *HelmStore) recordsOf(ctx context.Context, name string) ([]recordObject, error) {
	sel := labels.SelectorFromSet(labels.Set{"owner": "helm", "name": name}).String()
	records, err := s.records(s.namespace).list(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: list records: %w", s.namespace, name, err)
	}
	return records, nil
}

// lastOfHistory is the newest of every revision of a release, each decoded.
func (s *HelmStore) lastOfHistory(ctx context.Context, name string) (*Release, error) {
	h, err := s.History(ctx, name)
	if err != nil {
		return nil, err
	}
	return h[len(h)-1], nil
}

// History returns every recorded revision of a release, oldest first.
func (s *HelmStore) History(ctx context.Context, name string) ([]*Release, error) {
	rs, err := s.storage(ctx, s.namespace).History(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, s.notFound(name, 0, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: history: %w", s.namespace, name, err)
	}
	list, err := toV1List(rs)
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: history: %w", s.namespace, name, err)
	}
	if len(list) == 0 {
		return nil, s.notFound(name, 0, ErrNotFound)
	}
	relutil.SortByRevision(list)
	return list, nil
}

// Deployed returns the newest deployed revision of a release.
func (s *HelmStore) Deployed(ctx context.Context, name string) (*Release, error) {
	r, err := s.storage(ctx, s.namespace).Deployed(name)
	if errors.Is(err, driver.ErrNoDeployedReleases) {
		return nil, s.notFound(name, 0, ErrNoDeployed)
	}
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: deployed revision: %w", s.namespace, name, err)
	}
	return toV1(r)
}

// List returns the newest revision of each release that matches opts.
func (s *HelmStore) List(ctx context.Context, opts ListOptions) ([]*Release, error) {
	namespace := s.namespace
	if opts.AllNamespaces {
		namespace = ""
	}
	rs, err := s.storage(ctx, namespace).ListReleases()
	if err != nil {
		return nil, fmt.Errorf("list releases in namespace %q: %w", namespace, err)
	}
	list, err := toV1List(rs)
	if err != nil {
		return nil, fmt.Errorf("list releases in namespace %q: %w", namespace, err)
	}
	return Select(list, opts)
}

// Create records a new revision; it fails with ErrExists if the revision is recorded.
func (s *HelmStore) Create(ctx context.Context, rel *Release) error {
	if err := s.check(rel); err != nil {
		return err
	}
	err := s.records(s.namespace).write(ctx, rel, false)
	if err != nil {
		return fmt.Errorf("release %s/%s: create revision %d: %w", s.namespace, rel.Name, rel.Version, err)
	}
	return nil
}

// Update replaces a recorded revision.
func (s *HelmStore) Update(ctx context.Context, rel *Release) error {
	if err := s.check(rel); err != nil {
		return err
	}
	err := s.records(s.namespace).write(ctx, rel, true)
	if isNotFound(err) {
		return s.notFound(rel.Name, rel.Version, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("release %s/%s: update revision %d: %w", s.namespace, rel.Name, rel.Version, err)
	}
	return nil
}

// Delete removes one revision and returns what it held.
func (s *HelmStore) Delete(ctx context.Context, name string, version int) (*Release, error) {
	r, err := s.storage(ctx, s.namespace).Delete(name, version)
	if isNotFound(err) {
		return nil, s.notFound(name, version, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: delete revision %d: %w", s.namespace, name, version, err)
	}
	return toV1(r)
}

// check refuses a revision that cannot be recorded in this store.
func (s *HelmStore) check(rel *Release) error {
	switch {
	case rel == nil:
		return errors.New("record release: no release")
	case rel.Name == "" || rel.Version <= 0:
		return fmt.Errorf("record release %q revision %d: name and a positive revision are required", rel.Name, rel.Version)
	case rel.Info == nil:
		return fmt.Errorf("release %s/%s: record revision %d: no info", s.namespace, rel.Name, rel.Version)
	case rel.Namespace != s.namespace:
		return fmt.Errorf("release %s/%s: record revision %d: the release belongs to namespace %q",
			s.namespace, rel.Name, rel.Version, rel.Namespace)
	}
	return nil
}

func toV1(r helmrelease.Releaser) (*Release, error) {
	switch rel := r.(type) {
	case *Release:
		return rel, nil
	case Release:
		return &rel, nil
	default:
		return nil, fmt.Errorf("unsupported release type %T", r)
	}
}

func toV1List(rs []helmrelease.Releaser) ([]*Release, error) {
	list := make([]*Release, 0, len(rs))
	for _, r := range rs {
		rel, err := toV1(r)
		if err != nil {
			return nil, err
		}
		list = append(list, rel)
	}
	return list, nil
}
