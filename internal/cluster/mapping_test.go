package cluster_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/testenv"
)

// TestMappingAsksAgainForAKindMadeSince: a mapper that learnt the cluster's kinds before a CRD
// was made (kept by the clients of earlier operations, as the controller keeps it) maps the
// CRD's kind all the same: a kind it does not know is asked for once more, anew.
func TestMappingAsksAgainForAKindMadeSince(t *testing.T) {
	env := testenv.New(t)
	clients, err := kube.NewClients(env.Config, env.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.New(clients.Dynamic, clients.Mapper).Mapping(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}); err != nil {
		t.Fatalf("map ConfigMap: %v", err)
	}

	group := env.Namespace + ".example.com"
	env.Apply(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.`+group+`}
spec:
  group: `+group+`
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`)
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	t.Cleanup(func() {
		_ = env.Dynamic.Resource(crds).Delete(context.Background(), "gadgets."+group, metav1.DeleteOptions{})
	})
	gvk := schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Gadget"}
	// Until discovery serves the kind, as a mapper of its own sees it.
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		env.Mapper.Reset()
		_, err := env.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("discovery does not serve %s: %v", gvk, err)
	}

	if _, err := cluster.New(clients.Dynamic, clients.Mapper).Mapping(gvk); err != nil {
		t.Errorf("map %s with a mapper older than its CRD: %v", gvk, err)
	}
}
