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

func secretRecords(c typedcorev1.SecretInterface) recordObjects {
	of := func(s *corev1.Secret) *item {
		key := "release"
		if s.Type == PartSecretType {
			key = partDataKey
		}
		return itemOf(&s.ObjectMeta, s.Data[key])
	}
	return recordObjects{kind: "Secret", delete: c.Delete,
		list: func(ctx context.Context, selector string) ([]item, error) {
			l, err := c.List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return nil, err
			}
			out := make([]item, len(l.Items))
			for i := range l.Items {
				out[i] = *of(&l.Items[i])
			}
			return out, nil
		},
		get: func(ctx context.Context, name string) (*item, error) {
			s, err := c.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return of(s), nil
		},
		put: func(ctx context.Context, o newItem, update bool) (*item, error) {
			obj := &corev1.Secret{ObjectMeta: o.meta("Secret"), Type: "helm.sh/release.v1",
				Data: map[string][]byte{"release": o.data}}
			if o.part {
				obj.Type, obj.Data = PartSecretType, map[string][]byte{partDataKey: o.data}
			}
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

func configMapRecords(c typedcorev1.ConfigMapInterface) recordObjects {
	of := func(m *corev1.ConfigMap) *item {
		if b, ok := m.BinaryData[partDataKey]; ok {
			return itemOf(&m.ObjectMeta, b)
		}
		return itemOf(&m.ObjectMeta, []byte(m.Data["release"]))
	}
	return recordObjects{kind: "ConfigMap", delete: c.Delete,
		list: func(ctx context.Context, selector string) ([]item, error) {
			l, err := c.List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return nil, err
			}
			out := make([]item, len(l.Items))
			for i := range l.Items {
				out[i] = *of(&l.Items[i])
			}
			return out, nil
		},
		get: func(ctx context.Context, name string) (*item, error) {
			m, err := c.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return of(m), nil
		},
		put: func(ctx context.Context, o newItem, update bool) (*item, error) {
			obj := &corev1.ConfigMap{ObjectMeta: o.meta("ConfigMap")}
			if o.part {
				obj.BinaryData = map[string][]byte{partDataKey: o.data}
			} else {
				obj.Data = map[string]string{"release": string(o.data)}
			}
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

// itemOf is the item of an object with metadata m and data; one with no version label (not
// Helm's) has version 0.
func itemOf(m *metav1.ObjectMeta, data []byte) *item {
	v, _ := strconv.Atoi(m.Labels["version"])
	it := &item{namespace: m.Namespace, name: m.Name, uid: m.UID, version: v, labels: m.Labels, annotations: m.Annotations, data: data}
	for _, r := range m.OwnerReferences {
		it.owners = append(it.owners, r.UID)
	}
	return it
}

// ownedBy reports whether the object is owned by the object with uid.
func (it *item) ownedBy(uid types.UID) bool { return slices.Contains(it.owners, uid) }
