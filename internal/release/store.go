package release

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	typedcoordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	relutil "helm.sh/helm/v4/pkg/release/v1/util"
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

// Store is everything berth keeps of the releases of one namespace, and the one contract the CLI
// and the controller operate through (lifecycle.Deps.Store). Open builds it on a storage driver
// (secret, configmap or memory, as HELM_DRIVER chooses for helm); every driver keeps the same
// promises:
//
//   - Records: each revision of a release is one record in Helm's format (Reader, Writer), in
//     the objects helm's driver of the same name reads and writes. A record larger than one object can hold keeps
//     the rest in parts beside it, which its record object names and owns: a read never returns
//     a revision whose parts are missing, a delete removes them, and SweepParts removes those a
//     write stopped midway left behind.
//   - Journal: the journal of the operation under way on a release lives beside its records
//     (Journals), and every write of it is conditional on the version its writer last saw.
//   - Lease: one operation at a time holds a release's lease (Leases).
//   - Remembered lists: while an operation holds the lease, RememberLists makes the store answer
//     a list it made before from memory, changed by its own writes; the journals the store
//     returns read from those lists too.
//   - The cluster's view: RecordObject is the object a record is kept in, so that the preflight
//     matches webhooks against the operation's own writes.
type Store interface {
	Reader
	Writer
	// Namespace is the namespace whose releases the store holds.
	Namespace() string
	// Fits returns a *TooLargeError when the record of rel cannot be stored, even in parts:
	// what an operation checks before anything changes.
	Fits(rel *Release) error
	// EncodeAhead starts encoding the record of rel as it is now, for a write of that record
	// that follows; a write of another record encodes its own.
	EncodeAhead(rel *Release)
	// In returns the store of the releases of namespace on the same driver, clients and bounds,
	// sharing the parts seen and the lists remembered.
	In(namespace string) Store
	// Footprints measures what the records take, without decoding them (berth doctor).
	Footprints(ctx context.Context, allNamespaces bool) (*Footprints, error)
	// RecordObject is the object that holds revision version of release name with status,
	// without the record; nil for a driver that keeps its records outside the cluster.
	RecordObject(name string, version int, status Status) *unstructured.Unstructured
	// SweepParts deletes the parts of a revision that its record object does not name, and
	// returns their names.
	SweepParts(ctx context.Context, name string, version int) ([]string, error)
	// RememberLists keeps the lists the store makes until forget is called; the calls nest.
	RememberLists() (forget func())
	// Journals are the journals of the namespace's releases, kept beside the records: in
	// Secrets for the secret and configmap drivers (Helm ignores them), in the store's memory
	// for the memory driver. Never nil for a store Open returns.
	Journals() *Journals
	// Leases are the leases of the namespace's releases, kept in the cluster whatever the driver:
	// they guard the release's objects, which are in the cluster. Nil for a store made without
	// a cluster (NewMemoryStore, NewSecretStore, NewConfigMapStore alone); never nil for a store
	// Open returns.
	Leases() *Leases
}

// HelmStore keeps revisions in Helm's format: in Secrets (Helm's default), in ConfigMaps, or in
// memory, as HELM_DRIVER chooses for helm. It reads and writes them as Helm's drivers do, and
// keeps a record larger than one object can hold in parts beside it (see parts.go).
type HelmStore struct {
	// records reaches the objects that hold the records of namespace ("" for all namespaces).
	records   func(namespace string) recordObjects
	namespace string
	// kind is the kind of the objects that hold the records: Secret or ConfigMap.
	kind string
	// inMemory says the objects are kept in the process's memory, not in the cluster.
	inMemory bool
	// seen are the parts of the records this store wrote or read.
	seen *partsSeen
	// memo keeps lists while the store remembers them (RememberLists).
	memo *listMemo
	// secrets is the client of the Secrets that hold the records; nil for a store of another kind.
	secrets typedcorev1.SecretsGetter
	// journals is the client of the Secrets that hold the journals; nil: the store keeps none.
	journals typedcorev1.SecretsGetter
	// leases is the client of the release's Leases; nil: the store keeps none.
	leases typedcoordinationv1.LeasesGetter
	// expansion bounds what a record expands to once decompressed.
	expansion Expansion
	// encoder encodes the records it writes; nil encodes each alone.
	encoder *Encoder
}

// Expanding makes s decode records and journals within e, and returns s.
func (s *HelmStore) Expanding(e Expansion) *HelmStore {
	s.expansion = e
	return s
}

// Encoding makes s encode the records it writes, and check them (Fits), with enc, which other
// stores may share.
func (s *HelmStore) Encoding(enc *Encoder) *HelmStore {
	s.encoder = enc
	return s
}

// Fits returns a *TooLargeError when the record of rel cannot be stored, and nil when it can; a
// split record is encoded once, for Fits and the write that follows.
func (s *HelmStore) Fits(rel *Release) error {
	return s.encoder.Fits(rel)
}

// EncodeAhead starts encoding the record of rel as it is now, for the write of it that follows
// (Encoder.EncodeAhead): an operation that knows the record it will write next has it encoded
// while it waits for something else.
func (s *HelmStore) EncodeAhead(rel *Release) {
	s.encoder.EncodeAhead(rel)
}

// Every driver is a HelmStore over the objects it keeps records in (Secrets, ConfigMaps, or
// Secrets in memory).
var _ Store = (*HelmStore)(nil)

// NewSecretStore returns the store of the releases of namespace, kept as Secrets through secrets
// (a clientset's CoreV1()), its journals beside them; it keeps no leases. Open is what operations
// use.
func NewSecretStore(secrets typedcorev1.SecretsGetter, namespace string) *HelmStore {
	return (&HelmStore{namespace: namespace, kind: "Secret", seen: &partsSeen{}, secrets: secrets, journals: secrets, expansion: DefaultExpansion(), encoder: NewEncoder(),
		records: func(ns string) recordObjects { return secretRecords(secrets.Secrets(ns)) }}).remembering()
}

// NewConfigMapStore returns the store of the releases of namespace, kept as ConfigMaps through
// configMaps (a clientset's CoreV1()), as Helm's configmap driver keeps them; it keeps no
// journals and no leases. Open is what operations use.
func NewConfigMapStore(configMaps typedcorev1.ConfigMapsGetter, namespace string) *HelmStore {
	return (&HelmStore{namespace: namespace, kind: "ConfigMap", seen: &partsSeen{}, expansion: DefaultExpansion(), encoder: NewEncoder(),
		records: func(ns string) recordObjects { return configMapRecords(configMaps.ConfigMaps(ns)) }}).remembering()
}

// In returns the store of another namespace on the same backend, clients and bounds.
func (s *HelmStore) In(namespace string) Store {
	c := *s
	c.namespace = namespace
	return &c
}

// Journals returns the journals of the store's namespace, kept beside its records and read from
// the lists it remembers when they are kept in the same Secrets (Journals.Beside); nil when the
// store keeps none.
func (s *HelmStore) Journals() *Journals {
	if s.journals == nil {
		return nil
	}
	j := NewJournals(s.journals, s.namespace).Expanding(s.expansion).Beside(s)
	j.inMemory = s.inMemory
	return j
}

// Leases returns the leases of the store's namespace; nil when the store keeps none.
func (s *HelmStore) Leases() *Leases {
	if s.leases == nil {
		return nil
	}
	return NewLeases(s.leases, s.namespace)
}

// remembering makes s's record objects those its memo keeps the lists of.
func (s *HelmStore) remembering() *HelmStore {
	s.memo = &listMemo{}
	records := s.records
	s.records = func(ns string) recordObjects { return s.memo.remembering(ns, records(ns)) }
	return s
}

// RecordObject is the object that holds revision version of release name with status, as Helm's
// driver writes it (name, type and Helm's labels, without the record itself); nil for a store that
// keeps its records outside the cluster (memory). The preflight matches webhooks against it.
func (s *HelmStore) RecordObject(name string, version int, status Status) *unstructured.Unstructured {
	if s.kind == "" || s.inMemory {
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

func (s *HelmStore) notFound(name string, version int, err error) error {
	return &NotFoundError{Name: name, Namespace: s.namespace, Version: version, Err: err}
}

// Get returns one revision of a release: a *NotFoundError when it is not recorded, an
// *IncompleteRecordError when its record was not written to its end.
func (s *HelmStore) Get(ctx context.Context, name string, version int) (*Release, error) {
	r := s.reader(name)
	var it *item
	var err error
	if kept, ok := s.memo.lookup(s.namespace, name, Key(name, version)); ok {
		// The release's records were listed under its lease, and not written since.
		if it = kept; it == nil {
			err = apierrors.NewNotFound(schema.GroupResource{Resource: strings.ToLower(s.kind) + "s"}, Key(name, version))
		}
	} else {
		it, err = r.objs.get(ctx, Key(name, version))
	}
	if apierrors.IsNotFound(err) {
		return nil, s.notFound(name, version, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: get revision %d: %w", s.namespace, name, version, err)
	}
	rel, err := r.load(ctx, it)
	if err != nil {
		return nil, err
	}
	rel.Labels = withoutSystemLabels(it.labels)
	return rel, nil
}

// Last returns the newest revision of a release, whatever its status. It decodes that record
// alone, found by the version label Helm's driver writes on each: a release's records are mostly
// its chart and manifest, gzipped, and an operation reads the newest one at every decision. A
// record whose parts are missing is not a revision.
func (s *HelmStore) Last(ctx context.Context, name string) (*Release, error) {
	r := s.reader(name)
	list, err := r.records(ctx, "")
	if err != nil {
		return nil, err
	}
	rel, err := r.newest(ctx, list)
	if err == nil && rel == nil {
		err = s.notFound(name, 0, ErrNotFound)
	}
	return rel, err
}

// History returns every recorded revision of a release, oldest first: as Helm's driver reads
// them, without a record it cannot decode, and without one whose parts are missing.
func (s *HelmStore) History(ctx context.Context, name string) ([]*Release, error) {
	r := s.reader(name)
	list, err := r.records(ctx, "")
	if err != nil {
		return nil, err
	}
	all := r.all(ctx, list)
	if len(all) == 0 {
		return nil, s.notFound(name, 0, ErrNotFound)
	}
	out := make([]*Release, len(all))
	for i, l := range all {
		out[i] = l.rel
	}
	relutil.SortByRevision(out)
	return out, nil
}

// Deployed returns the newest deployed revision of a release.
func (s *HelmStore) Deployed(ctx context.Context, name string) (*Release, error) {
	r := s.reader(name)
	list, err := r.records(ctx, ",status="+string(StatusDeployed))
	if err != nil {
		return nil, err
	}
	rel, err := r.newest(ctx, list)
	if err == nil && rel == nil {
		err = s.notFound(name, 0, ErrNoDeployed)
	}
	return rel, err
}

// List returns the newest revision of each release that matches opts, as Helm's list reads
// them: from the record objects alone, without what a large record keeps in its parts (its
// chart's templates and files, sometimes its manifest). It decodes only the records it may
// return.
func (s *HelmStore) List(ctx context.Context, opts ListOptions) ([]*Release, error) {
	namespace := s.namespace
	if opts.AllNamespaces {
		namespace = ""
	}
	list, err := s.records(namespace).list(ctx, "owner=helm")
	if err != nil {
		return nil, fmt.Errorf("list releases in namespace %q: %w", namespace, err)
	}
	if !(len(opts.Statuses) == 1 && opts.Statuses[0] == StatusSuperseded) {
		list = newestItems(list)
	}
	rels := make([]*Release, 0, len(list))
	for i := range list {
		object := s.objectName(&list[i])
		rel, err := decode(ctx, s.expansion, object, list[i].data)
		if err == nil {
			err = matches(object, rel, &list[i])
		}
		if err != nil {
			continue // as Helm's driver lists
		}
		rel.Labels = list[i].labels
		rels = append(rels, rel)
	}
	return Select(rels, opts)
}

// newestItems keeps, of the record objects in list, the newest of each release by the labels
// Helm's driver writes (namespace, name, version); all of a release's when any has no version
// label.
func newestItems(list []item) []item {
	type key struct{ namespace, name string }
	newest := map[key]int{}
	unlabelled := map[key]bool{}
	for _, it := range list {
		k := key{it.namespace, it.labels["name"]}
		if it.version <= 0 {
			unlabelled[k] = true
		}
		newest[k] = max(newest[k], it.version)
	}
	return slices.DeleteFunc(list, func(it item) bool {
		k := key{it.namespace, it.labels["name"]}
		return !unlabelled[k] && it.version != newest[k]
	})
}

// Create records a new revision; it fails with ErrExists if the revision is recorded.
func (s *HelmStore) Create(ctx context.Context, rel *Release) error {
	if err := s.check(rel); err != nil {
		return err
	}
	if err := s.write(ctx, rel, false); err != nil {
		return fmt.Errorf("release %s/%s: create revision %d: %w", s.namespace, rel.Name, rel.Version, err)
	}
	return nil
}

// Update replaces a recorded revision.
func (s *HelmStore) Update(ctx context.Context, rel *Release) error {
	if err := s.check(rel); err != nil {
		return err
	}
	err := s.write(ctx, rel, true)
	if isNotFound(err) {
		return s.notFound(rel.Name, rel.Version, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("release %s/%s: update revision %d: %w", s.namespace, rel.Name, rel.Version, err)
	}
	return nil
}

// Delete removes one revision, its parts with it, and returns what it held.
func (s *HelmStore) Delete(ctx context.Context, name string, version int) (*Release, error) {
	rel, err := s.Get(ctx, name, version)
	var incomplete *IncompleteRecordError
	if err != nil && !errors.As(err, &incomplete) {
		return nil, err
	}
	objs := s.records(s.namespace)
	key := Key(name, version)
	it, err := objs.get(ctx, key)
	if err == nil {
		err = s.deleteRecord(ctx, objs, it)
	}
	if isNotFound(err) {
		return nil, s.notFound(name, version, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: delete revision %d: %w", s.namespace, name, version, err)
	}
	if rel == nil {
		return nil, incomplete
	}
	return rel, nil
}

// deleteRecord deletes the record object it, only if it is still that object, and then its parts.
func (s *HelmStore) deleteRecord(ctx context.Context, objs recordObjects, it *item) error {
	uid := it.uid
	err := objs.delete(ctx, it.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil {
		return err
	}
	if count, sum, ok, err := recordParts(it); ok && err == nil {
		deletePartsOf(ctx, objs, it.name, count, sum)
		s.seen.set(s.namespace+"/"+it.name, written{})
	}
	return nil
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
