package cluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

func TestServedKinds(t *testing.T) {
	var crd unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: shirts.example.com}
spec:
  group: example.com
  names: {kind: Shirt, plural: shirts}
  versions:
  - {name: v1, served: true, storage: true}
  - {name: v1beta1, served: false, storage: false}
  - {name: v2, served: true, storage: false}
`), &crd.Object); err != nil {
		t.Fatal(err)
	}
	want := []schema.GroupVersionKind{
		{Group: "example.com", Version: "v1", Kind: "Shirt"},
		{Group: "example.com", Version: "v2", Kind: "Shirt"},
	}
	if diff := cmp.Diff(want, servedKinds(&crd)); diff != "" {
		t.Errorf("served kinds (-want +got):\n%s", diff)
	}
}
