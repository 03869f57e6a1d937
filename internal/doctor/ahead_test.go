package doctor

import (
	"context"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/berthdev/berth/internal/release"
)

// TestPreflightTakesTheReadsAhead: a preflight given the reads started ahead for its operation
// and namespace reads nothing more, and one of another operation reads again.
func TestPreflightTakesTheReadsAhead(t *testing.T) {
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop"}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		validatingGVR: "ValidatingWebhookConfigurationList", mutatingGVR: "MutatingWebhookConfigurationList", apiServiceGVR: "APIServiceList",
	}, ns)
	var reads atomic.Int32
	dyn.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		reads.Add(1)
		return false, nil, nil
	})
	c := Cluster{Dynamic: dyn}
	ctx := context.Background()
	c.Ahead = ReadAhead(ctx, c, release.OpInstall, "shop")
	if _, err := Preflight(ctx, c, release.OpInstall, "shop", "app", nil); err != nil {
		t.Fatal(err)
	}
	if n := reads.Load(); n != 4 {
		t.Errorf("%d reads with the reads ahead taken, want the 4 made ahead (3 lists and the namespace)", n)
	}
	reads.Store(0)
	if _, err := Preflight(ctx, c, release.OpUpgrade, "shop", "app", nil); err != nil {
		t.Fatal(err)
	}
	if n := reads.Load(); n != 4 {
		t.Errorf("a preflight of another operation read %d times, want its own 4", n)
	}
}
