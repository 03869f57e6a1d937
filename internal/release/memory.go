package release

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// NewMemoryStore returns a store of the releases of namespace held in memory for as long as the
// process lives (HELM_DRIVER=memory, and tests), their journals with them; it keeps no leases
// (Open's memory store keeps them in the cluster). It keeps Secrets in memory as the API server
// would (names, UIDs, resource versions, labels selected as a list selects them), so records are
// encoded, labelled and queried exactly as in a cluster; use In for other namespaces on the same
// memory.
func NewMemoryStore(namespace string) *HelmStore {
	s := NewSecretStore(&memorySecrets{objs: map[string]*corev1.Secret{}}, namespace)
	s.inMemory = true
	return s
}

// memorySecrets holds Secrets by namespace and name. It answers what the store asks of Secrets
// (list, get, create, update, delete); it is small where a fake clientset would link a fake of
// every API group into the binary.
type memorySecrets struct {
	mu   sync.Mutex
	objs map[string]*corev1.Secret // by namespace/name
	// version is the resource version of the last write.
	version uint64
}

// nextVersion is the resource version of a new write; m.mu is held.
func (m *memorySecrets) nextVersion() string {
	m.version++
	return strconv.FormatUint(m.version, 10)
}

func (m *memorySecrets) Secrets(namespace string) typedcorev1.SecretInterface {
	return &memorySecretsIn{m: m, namespace: namespace}
}

// memorySecretsIn are the Secrets of one namespace. The methods the store does not call are
// those of the embedded interface, which is nil.
type memorySecretsIn struct {
	typedcorev1.SecretInterface
	m         *memorySecrets
	namespace string
}

var secretsResource = schema.GroupResource{Resource: "secrets"}

func (s *memorySecretsIn) key(name string) string { return s.namespace + "/" + name }

func (s *memorySecretsIn) List(_ context.Context, opts metav1.ListOptions) (*corev1.SecretList, error) {
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	out := &corev1.SecretList{}
	for _, obj := range s.m.objs {
		if (s.namespace == "" || obj.Namespace == s.namespace) && sel.Matches(labels.Set(obj.Labels)) {
			out.Items = append(out.Items, *obj.DeepCopy())
		}
	}
	sort.Slice(out.Items, func(i, j int) bool {
		a, b := out.Items[i], out.Items[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	return out, nil
}

func (s *memorySecretsIn) Get(_ context.Context, name string, _ metav1.GetOptions) (*corev1.Secret, error) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	obj, ok := s.m.objs[s.key(name)]
	if !ok {
		return nil, apierrors.NewNotFound(secretsResource, name)
	}
	return obj.DeepCopy(), nil
}

func (s *memorySecretsIn) Create(_ context.Context, obj *corev1.Secret, _ metav1.CreateOptions) (*corev1.Secret, error) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if _, ok := s.m.objs[s.key(obj.Name)]; ok {
		return nil, apierrors.NewAlreadyExists(secretsResource, obj.Name)
	}
	obj = obj.DeepCopy()
	obj.Namespace, obj.UID, obj.ResourceVersion = s.namespace, uuid.NewUUID(), s.m.nextVersion()
	s.m.objs[s.key(obj.Name)] = obj
	return obj.DeepCopy(), nil
}

func (s *memorySecretsIn) Update(_ context.Context, obj *corev1.Secret, _ metav1.UpdateOptions) (*corev1.Secret, error) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	old, ok := s.m.objs[s.key(obj.Name)]
	if !ok {
		return nil, apierrors.NewNotFound(secretsResource, obj.Name)
	}
	if obj.ResourceVersion != "" && obj.ResourceVersion != old.ResourceVersion {
		return nil, apierrors.NewConflict(secretsResource, obj.Name, errVersionPrecondition)
	}
	obj = obj.DeepCopy()
	obj.Namespace, obj.UID, obj.ResourceVersion = s.namespace, old.UID, s.m.nextVersion()
	s.m.objs[s.key(obj.Name)] = obj
	return obj.DeepCopy(), nil
}

func (s *memorySecretsIn) Delete(_ context.Context, name string, opts metav1.DeleteOptions) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	obj, ok := s.m.objs[s.key(name)]
	if !ok {
		return apierrors.NewNotFound(secretsResource, name)
	}
	if p := opts.Preconditions; p != nil && p.UID != nil && *p.UID != "" && *p.UID != obj.UID {
		return apierrors.NewConflict(secretsResource, name, errUIDPrecondition)
	}
	if p := opts.Preconditions; p != nil && p.ResourceVersion != nil && *p.ResourceVersion != obj.ResourceVersion {
		return apierrors.NewConflict(secretsResource, name, errVersionPrecondition)
	}
	delete(s.m.objs, s.key(name))
	return nil
}

// errUIDPrecondition is why a delete of a Secret that is no longer the one named fails;
// errVersionPrecondition, why a write of a Secret changed since its writer read it fails.
var (
	errUIDPrecondition     = errors.New("the UID in the precondition does not match the UID of the object")
	errVersionPrecondition = errors.New("the object has been modified; please apply your changes to the latest version and try again")
)
