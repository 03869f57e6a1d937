package lifecycle_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// readingCluster is a fakeCluster that notes the objects LiveObjects is asked for.
type readingCluster struct {
	*fakeCluster
	mu    sync.Mutex
	asked []resource.Identity
}

func (c *readingCluster) LiveObjects(ctx context.Context, objs []*unstructured.Unstructured) (map[resource.Identity]*unstructured.Unstructured, error) {
	c.mu.Lock()
	for _, obj := range objs {
		c.asked = append(c.asked, resource.IdentityOf(obj))
	}
	c.mu.Unlock()
	return c.fakeCluster.LiveObjects(ctx, objs)
}

func (c *readingCluster) take() []resource.Identity {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.asked
	c.asked = nil
	return out
}

// TestSurveyReadsOnlyObjectsThatMayExist: an install reads none of its objects when their dry
// runs show none exists (but those of kinds its CRDs define, not served yet: reading them costs
// nothing); an upgrade reads the objects of the revision it replaces; an install over objects of
// another release reads every one of them (their dry runs show them) and is refused, naming each.
func TestSurveyReadsOnlyObjectsThatMayExist(t *testing.T) {
	ctx := t.Context()
	ch, err := chart.Load(filepath.Join("..", "chart", "testdata", "app"))
	if err != nil {
		t.Fatal(err)
	}
	c := &readingCluster{fakeCluster: newFakeCluster()}
	deps := func() lifecycle.Deps {
		return lifecycle.Deps{Cluster: c, Store: release.NewMemoryStore("team"), Namespaces: fakeNamespaces{}, Journals: &memoryJournals{},
			Holder: release.Holder{Identity: "test"}}
	}
	d := deps()
	wait := lifecycle.WaitOptions{Timeout: time.Minute}
	install := lifecycle.InstallOptions{Name: "web", Namespace: "team", Chart: ch, WaitOptions: wait}
	res, err := lifecycle.Install(ctx, d, install)
	if err != nil {
		t.Fatal(err)
	}
	objects := releaseObjects(t, res.Release)
	asked := c.take()
	for _, id := range objects {
		if slices.Contains(asked, id) && id.Kind != "Shirt" {
			t.Errorf("the install read %s, which its dry run showed missing", id)
		}
	}

	if _, err := lifecycle.Upgrade(ctx, d, lifecycle.UpgradeOptions{Name: "web", Namespace: "team", Chart: ch, WaitOptions: wait}); err != nil {
		t.Fatal(err)
	}
	asked = c.take()
	for _, id := range objects {
		if !slices.Contains(asked, id) {
			t.Errorf("the upgrade did not read %s, an object of the revision it replaces", id)
		}
	}

	// The objects now belong to release other; release web has no records.
	c.mu.Lock()
	for _, obj := range c.objects {
		if a := obj.GetAnnotations(); a[resource.ReleaseNameAnnotation] == "web" {
			a[resource.ReleaseNameAnnotation] = "other"
			obj.SetAnnotations(a)
		}
	}
	c.mu.Unlock()
	_, err = lifecycle.Install(ctx, deps(), install)
	var owned *lifecycle.OwnershipError
	if !errors.As(err, &owned) {
		t.Fatalf("the install over the objects of another release: %v, want an OwnershipError", err)
	}
	asked = c.take()
	var refused []resource.Identity
	for _, e := range unjoin(err) {
		if errors.As(e, &owned) && owned.Release == "other" {
			refused = append(refused, owned.ID)
		}
	}
	for _, id := range objects {
		if !slices.Contains(asked, id) {
			t.Errorf("the install over the objects of another release did not read %s", id)
		}
		if !slices.Contains(refused, id) {
			t.Errorf("the install over the objects of another release did not refuse %s: %v", id, err)
		}
	}
}

// releaseObjects are the identities of the objects of rel's manifest, as the fake cluster has them.
func releaseObjects(t *testing.T, rel *release.Release) []resource.Identity {
	t.Helper()
	objs, err := resource.ParseManifest(rel.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	var out []resource.Identity
	for _, obj := range objs {
		if obj.GetNamespace() == "" && !clusterScoped[obj.GetKind()] {
			obj.SetNamespace(rel.Namespace)
		}
		out = append(out, resource.IdentityOf(obj))
	}
	if len(out) == 0 {
		t.Fatal("the release has no objects")
	}
	return out
}

// unjoin flattens the errors joined in err.
func unjoin(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, unjoin(e)...)
	}
	return out
}
