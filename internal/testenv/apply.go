package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

// FieldManager is the field manager of objects tests apply.
const FieldManager = "berth-testenv"

// Apply server-side applies the one object in manifest (YAML or JSON) and
// returns it as the server stored it. A namespaced object without a namespace
// goes to the test's namespace.
func (e *Env) Apply(t testing.TB, manifest string) *unstructured.Unstructured {
	t.Helper()
	objs := e.ApplyAll(t, manifest)
	if len(objs) != 1 {
		t.Fatalf("testenv: apply: manifest holds %d objects, want 1", len(objs))
	}
	return objs[0]
}

// ApplyAll server-side applies, in order, every object in a manifest of YAML
// documents and returns them as the server stored them.
func (e *Env) ApplyAll(t testing.TB, manifest string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := decodeManifest(manifest)
	if err != nil {
		t.Fatalf("testenv: apply: %v", err)
	}
	applied := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		out, err := e.applyObject(t.Context(), obj)
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		applied = append(applied, out)
	}
	return applied
}

func (e *Env) applyObject(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ri, err := e.resourceFor(obj)
	if err != nil {
		return nil, err
	}
	out, err := ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", objectID(obj), err)
	}
	return out, nil
}

// Resource returns the client for a kind, given as in a manifest
// ("apps/v1", "Deployment"), scoped to the test's namespace when the kind is
// namespaced.
func (e *Env) Resource(t testing.TB, apiVersion, kind string) dynamic.ResourceInterface {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	ri, err := e.resourceFor(obj)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return ri
}

// resourceFor maps obj's kind to its resource, defaulting the namespace of a
// namespaced object to the test's.
func (e *Env) resourceFor(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := e.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		e.Mapper.Reset()
		mapping, err = e.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", objectID(obj), err)
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return e.Dynamic.Resource(mapping.Resource), nil
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(e.Namespace)
	}
	return e.Dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace()), nil
}

// decodeManifest decodes the objects in a stream of YAML or JSON documents,
// skipping empty ones.
func decodeManifest(manifest string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode document %d: %w", len(objs)+1, err)
		}
		if s := strings.TrimSpace(string(raw)); s == "" || s == "null" || s == "{}" {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("decode document %d: %w", len(objs)+1, err)
		}
		if obj.GetName() == "" {
			return nil, fmt.Errorf("decode document %d: metadata.name is required", len(objs)+1)
		}
		objs = append(objs, obj)
	}
}

// objectID names an object as Kind/namespace/name, with the group when it is
// not core.
func objectID(obj *unstructured.Unstructured) string {
	gk := obj.GroupVersionKind().GroupKind()
	id := gk.Kind
	if gk.Group != "" {
		id = schema.GroupKind{Group: gk.Group, Kind: gk.Kind}.String()
	}
	if ns := obj.GetNamespace(); ns != "" {
		return id + "/" + ns + "/" + obj.GetName()
	}
	return id + "/" + obj.GetName()
}
