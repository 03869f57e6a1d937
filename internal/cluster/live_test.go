package cluster_test

import (
	"fmt"
	"testing"

	"k8s.io/client-go/metadata"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/resource"
)

// TestLiveReadsMetadataOfWhatExists reads many ConfigMaps (listed), one Secret (read alone),
// objects that do not exist and an object of a kind that is not served, with and without a
// metadata client: the same objects are found, each with its kind, UID and annotations.
func TestLiveReadsMetadataOfWhatExists(t *testing.T) {
	env, c := setup(t)
	var ids []resource.Identity
	for i := range 10 {
		env.Apply(t, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: cm-%d, annotations: {meta.helm.sh/release-name: r%d}}, data: {big: "%0500d"}}`, i, i, 0))
		ids = append(ids, resource.Identity{Kind: "ConfigMap", Namespace: env.Namespace, Name: fmt.Sprintf("cm-%d", i)})
	}
	env.Apply(t, `{apiVersion: v1, kind: Secret, metadata: {name: s}, stringData: {k: v}}`)
	ids = append(ids,
		resource.Identity{Kind: "Secret", Namespace: env.Namespace, Name: "s"},
		resource.Identity{Kind: "ConfigMap", Namespace: env.Namespace, Name: "missing"},
		resource.Identity{Kind: "Secret", Namespace: env.Namespace, Name: "missing"},
		resource.Identity{Group: "nothing.example.com", Kind: "Gadget", Namespace: env.Namespace, Name: "g"},
	)
	meta, err := metadata.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	for name, client := range map[string]*cluster.Client{"metadata": cluster.New(env.Dynamic, env.Mapper).WithMetadata(meta), "whole objects": c} {
		t.Run(name, func(t *testing.T) {
			got, err := client.Live(deadline(t), ids)
			if err != nil {
				t.Fatalf("Live: %v", err)
			}
			if len(got) != 11 {
				t.Errorf("found %d objects, want the 10 ConfigMaps and the Secret", len(got))
			}
			for i, id := range ids[:11] {
				obj := got[id]
				if obj == nil {
					t.Errorf("%s not found", id)
					continue
				}
				if resource.IdentityOf(obj) != id || obj.GetUID() == "" || obj.GetResourceVersion() == "" {
					t.Errorf("%s: read as %s with UID %q, resourceVersion %q", id, resource.IdentityOf(obj), obj.GetUID(), obj.GetResourceVersion())
				}
				if i < 10 && obj.GetAnnotations()["meta.helm.sh/release-name"] != fmt.Sprintf("r%d", i) {
					t.Errorf("%s: annotations %v", id, obj.GetAnnotations())
				}
			}
		})
	}
}
