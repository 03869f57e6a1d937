// Package resource is the vocabulary every other package speaks: the exact identity of an object,
// the order in which kinds are installed and uninstalled, and Helm's annotations. It does no I/O.
package resource

import (
	"cmp"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Identity names one object exactly. The API version is deliberately not part of it: versions of
// one group are aliases of one object (apps/v1beta1 and apps/v1 Deployments are the same thing),
// while the same Kind in two groups (stable.example.com and beta.example.com Shirts) is two
// different objects. Namespace is empty for cluster-scoped objects.
type Identity struct {
	Group     string `json:"group"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// IdentityOf returns the identity of an object as it is written, without defaulting its namespace.
func IdentityOf(obj *unstructured.Unstructured) Identity {
	gvk := obj.GroupVersionKind()
	return Identity{Group: gvk.Group, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// GroupKind returns the identity's group and kind.
func (id Identity) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: id.Group, Kind: id.Kind}
}

// CRDKind is the group and kind of a CustomResourceDefinition.
var CRDKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// IsCRD reports whether the identity names a CustomResourceDefinition.
func (id Identity) IsCRD() bool { return id.GroupKind() == CRDKind }

// OnlyCRDs reports whether ids are some CustomResourceDefinitions and nothing else.
func OnlyCRDs(ids []Identity) bool {
	for _, id := range ids {
		if !id.IsCRD() {
			return false
		}
	}
	return len(ids) > 0
}

// String prints the identity as Kind/namespace/name, or Kind/name when cluster-scoped, with the
// group after the kind (Kind.group) when it is not the core group.
func (id Identity) String() string {
	var b strings.Builder
	b.WriteString(id.Kind)
	if id.Group != "" {
		b.WriteString(".")
		b.WriteString(id.Group)
	}
	b.WriteString("/")
	if id.Namespace != "" {
		b.WriteString(id.Namespace)
		b.WriteString("/")
	}
	b.WriteString(id.Name)
	return b.String()
}

// ParseIdentity parses what String prints.
func ParseIdentity(s string) (Identity, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return Identity{}, fmt.Errorf("identity %q: want Kind[.group]/[namespace/]name", s)
	}
	var id Identity
	id.Kind, id.Group, _ = strings.Cut(parts[0], ".")
	if len(parts) == 3 {
		id.Namespace, id.Name = parts[1], parts[2]
	} else {
		id.Name = parts[1]
	}
	if id.Kind == "" || id.Name == "" || (len(parts) == 3 && id.Namespace == "") {
		return Identity{}, fmt.Errorf("identity %q: want Kind[.group]/[namespace/]name", s)
	}
	return id, nil
}

// Compare orders identities by group, kind, namespace, then name, for stable output; it suits
// slices.SortFunc.
func Compare(a, b Identity) int {
	return cmp.Or(
		cmp.Compare(a.Group, b.Group),
		cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Namespace, b.Namespace),
		cmp.Compare(a.Name, b.Name),
	)
}
