package testenv

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestDecodeManifest(t *testing.T) {
	manifest := `
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
data:
  k: v
---
# only a comment
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: b
  namespace: other
spec:
  replicas: 2
---
{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c"}}
`
	objs, err := decodeManifest(manifest)
	if err != nil {
		t.Fatalf("decodeManifest: %v", err)
	}
	var ids []string
	for _, o := range objs {
		ids = append(ids, objectID(o))
	}
	want := []string{"ConfigMap/a", "Deployment.apps/other/b", "Secret/c"}
	if len(ids) != len(want) {
		t.Fatalf("decoded %v, want %v", ids, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Errorf("object %d is %s, want %s", i, ids[i], want[i])
		}
	}
	replicas, found, err := unstructured.NestedInt64(objs[1].Object, "spec", "replicas")
	if err != nil || !found || replicas != 2 {
		t.Errorf("spec.replicas = %d (found %v, error %v), want the integer 2", replicas, found, err)
	}
}

func TestDecodeManifestErrors(t *testing.T) {
	for name, manifest := range map[string]string{
		"no kind":  "apiVersion: v1\nmetadata: {name: a}\n",
		"no name":  "apiVersion: v1\nkind: ConfigMap\n",
		"not YAML": "a: [",
	} {
		if _, err := decodeManifest(manifest); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
}

func TestDecodeManifestFlowStyle(t *testing.T) {
	objs, err := decodeManifest(`{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}`)
	if err != nil || len(objs) != 1 || objectID(objs[0]) != "ConfigMap/a" {
		t.Fatalf("decodeManifest of a flow-style object: %d objects, error %v", len(objs), err)
	}
}
