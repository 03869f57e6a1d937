package release

import (
	"context"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// item is a Secret or ConfigMap that holds a record, or a part of one.
type item struct {
	namespace   string
	name        string
	uid         types.UID
	version     int
	labels      map[string]string
	annotations map[string]string
	// owners are the UIDs of the objects that own it.
	owners []types.UID
	// data is a record object's data (the record, in base64) or a part's contents.
	data []byte
	// typ is a Secret's type ("" for a ConfigMap); resourceVersion is the version of the object
	// read.
	typ, resourceVersion string
	// journal is the data of a Secret of type JournalSecretType; nil for any other object.
	journal map[string][]byte
}

// newItem is an object to write: a record object, or a part owned by the record object owner.
type newItem struct {
	name        string
	labels      map[string]string
	annotations map[string]string
	data        []byte
	// part says the object is a part of a record, owned by the record object with UID owner.
	part  bool
	owner types.UID
	// ownerName is the name of that record object.
	ownerName string
}

// recordObjects lists, gets, writes and deletes the objects that hold a namespace's records
// and their parts, of one kind.
type recordObjects struct {
	kind   string
	list   func(ctx context.Context, selector string) ([]item, error)
	get    func(ctx context.Context, name string) (*item, error)
	delete func(ctx context.Context, name string, opts metav1.DeleteOptions) error
	// put creates (update false) or replaces an object.
	put func(ctx context.Context, o newItem, update bool) (*item, error)
}

func (o newItem) meta(kind string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: o.name, Labels: o.labels, Annotations: o.annotations}
	if o.part {
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: kind, Name: o.ownerName, UID: o.owner}}
	}
	return m
}

// client is what the store asks of a typed client of Secrets or ConfigMaps (T), and their list (L).
type client[T, L any] interface {
	List(ctx context.Context, opts metav1.ListOptions) (*L, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*T, error)
	Create(ctx context.Context, obj *T, opts metav1.CreateOptions) (*T, error)
	Update(ctx context.Context, obj *T, opts metav1.UpdateOptions) (*T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// objectsOf is the recordObjects of kind through c: items are a list's objects, of an object's
// item, and build the object of a new item.
func objectsOf[T, L any](kind string, c client[T, L], items func(*L) []T, of func(*T) *item, build func(newItem) *T) recordObjects {
	return recordObjects{kind: kind, delete: c.Delete,
		list: func(ctx context.Context, selector string) ([]item, error) {
			l, err := c.List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return nil, err
			}
			objs := items(l)
			out := make([]item, len(objs))
			for i := range objs {
				out[i] = *of(&objs[i])
			}
			return out, nil
		},
		get: func(ctx context.Context, name string) (*item, error) {
			obj, err := c.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return of(obj), nil
		},
		put: func(ctx context.Context, o newItem, update bool) (*item, error) {
			obj := build(o)
			var err error
			if update {
				obj, err = c.Update(ctx, obj, metav1.UpdateOptions{})
			} else {
				obj, err = c.Create(ctx, obj, metav1.CreateOptions{})
			}
			if err != nil {
				return nil, err
			}
			return of(obj), nil
		}}
}

// secretRecords keeps records as Helm's Secrets driver does, and their parts as Secrets of type
// PartSecretType.
func secretRecords(c typedcorev1.SecretInterface) recordObjects {
	return objectsOf("Secret", c, func(l *corev1.SecretList) []corev1.Secret { return l.Items },
		func(s *corev1.Secret) *item {
			key := "release"
			if s.Type == PartSecretType {
				key = partDataKey
			}
			it := itemOf(&s.ObjectMeta, s.Data[key])
			it.typ = string(s.Type)
			if s.Type == JournalSecretType {
				it.journal = s.Data
			}
			return it
		},
		func(o newItem) *corev1.Secret {
			if o.part {
				return &corev1.Secret{ObjectMeta: o.meta("Secret"), Type: PartSecretType, Data: map[string][]byte{partDataKey: o.data}}
			}
			return &corev1.Secret{ObjectMeta: o.meta("Secret"), Type: "helm.sh/release.v1", Data: map[string][]byte{"release": o.data}}
		})
}

// configMapRecords keeps records as Helm's ConfigMaps driver does, and their parts as ConfigMaps
// whose binary data holds them.
func configMapRecords(c typedcorev1.ConfigMapInterface) recordObjects {
	return objectsOf("ConfigMap", c, func(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items },
		func(m *corev1.ConfigMap) *item {
			if b, ok := m.BinaryData[partDataKey]; ok {
				return itemOf(&m.ObjectMeta, b)
			}
			return itemOf(&m.ObjectMeta, []byte(m.Data["release"]))
		},
		func(o newItem) *corev1.ConfigMap {
			if o.part {
				return &corev1.ConfigMap{ObjectMeta: o.meta("ConfigMap"), BinaryData: map[string][]byte{partDataKey: o.data}}
			}
			return &corev1.ConfigMap{ObjectMeta: o.meta("ConfigMap"), Data: map[string]string{"release": string(o.data)}}
		})
}

// itemOf is the item of an object with metadata m and data; one with no version label (not
// Helm's) has version 0.
func itemOf(m *metav1.ObjectMeta, data []byte) *item {
	v, _ := strconv.Atoi(m.Labels["version"])
	it := &item{namespace: m.Namespace, name: m.Name, uid: m.UID, version: v, labels: m.Labels, annotations: m.Annotations, data: data,
		resourceVersion: m.ResourceVersion}
	for _, r := range m.OwnerReferences {
		it.owners = append(it.owners, r.UID)
	}
	return it
}

// ownedBy reports whether the object is owned by the object with uid.
func (it *item) ownedBy(uid types.UID) bool { return slices.Contains(it.owners, uid) }
