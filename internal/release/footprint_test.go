package release

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/berthdev/berth/internal/testenv"
)

// TestFootprints checks that the footprint of each release is what its record objects and parts
// hold, byte for byte, found with one list of each; that a record whose part is gone is
// incomplete; and that parts no record object names are orphans, whether their record object is
// gone or names other parts.
func TestFootprints(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	s := NewSecretStore(c.CoreV1(), "ns")
	for _, r := range []*Release{
		large("ns", "big", 1, 3<<20, 1<<10), large("ns", "big", 2, 3<<20, 1<<10),
		rev("ns", "small", 1, StatusSuperseded), rev("ns", "small", 2, StatusDeployed),
	} {
		if err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.In("other").Create(ctx, rev("other", "elsewhere", 1, StatusDeployed)); err != nil {
		t.Fatal(err)
	}
	secrets := c.CoreV1().Secrets("ns")
	// What the cluster holds, read as objects.
	size := func(key string) (object, parts, count int) {
		t.Helper()
		rec, err := secrets.Get(ctx, key, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: "owner=berth," + PartSetLabel})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range l.Items {
			if strings.HasPrefix(p.Name, key+".") {
				// A fake clientset gives objects no UID: a part is then written as a record
				// object is, without an owner, in data key release.
				parts += len(p.Data[partDataKey]) + len(p.Data["release"])
				count++
			}
		}
		return len(rec.Data["release"]), parts, count
	}

	c.ClearActions()
	fp, err := s.Footprints(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Actions()); n != 2 {
		t.Errorf("Footprints made %d requests, want 2 (the record objects, the parts): %v", n, c.Actions())
	}
	if len(fp.Releases) != 2 || fp.Releases[0].Name != "big" || fp.Releases[1].Name != "small" || len(fp.Orphans) != 0 {
		t.Fatalf("footprints of namespace ns: %+v", fp)
	}
	big := fp.Releases[0]
	total := 0
	for i, r := range big.Records {
		object, parts, count := size(Key("big", i+1))
		total += object + parts
		if r.Version != i+1 || r.Status != StatusDeployed || r.Object != Key("big", i+1) || r.Bytes != object ||
			r.PartBytes != parts || r.Parts != count || count != 4 || r.Missing != 0 || r.Incomplete || !r.Split() || r.Bytes > MaxObjectData {
			t.Errorf("revision %d of big: %+v, want %d bytes in the object and %d in %d parts", i+1, r, object, parts, count)
		}
	}
	if big.Total() != total || big.Kind != "Secret" || big.Newest().Version != 2 {
		t.Errorf("big's history takes %d bytes, want %d (%+v)", big.Total(), total, big)
	}
	small := fp.Releases[1]
	if object, _, _ := size(Key("small", 2)); len(small.Records) != 2 || small.Newest().Split() || small.Newest().Size() != object || small.Newest().Status != StatusDeployed {
		t.Errorf("small: %+v, want 2 records of one object each, the newest of %d bytes", small, object)
	}
	if all, err := s.Footprints(ctx, true); err != nil || len(all.Releases) != 3 || all.Releases[2].Name != "elsewhere" {
		t.Errorf("footprints of every namespace: %+v (%v), want big, small, elsewhere", all, err)
	}

	// A part of revision 2 deleted: its record is incomplete.
	rec2, err := secrets.Get(ctx, Key("big", 2), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	count, sum, _ := partsOf(rec2.Annotations[PartsAnnotation])
	if err := secrets.Delete(ctx, partName(Key("big", 2), sum, 1), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A part left from a former write of revision 1, still owned by its record object, and one
	// of a revision whose record object is gone.
	rec1, err := secrets.Get(ctx, Key("big", 1), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stray := func(name string, version int, set string, owner *corev1.Secret) {
		t.Helper()
		p := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: partLabels("big", version, set)},
			Type: PartSecretType, Data: map[string][]byte{partDataKey: make([]byte, 1000)}}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: owner.Name, UID: owner.UID}}
		}
		if _, err := secrets.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	oldSet := "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	stray(partName(Key("big", 1), oldSet, 0), 1, oldSet, rec1)
	stray(partName(Key("big", 1), oldSet, 1), 1, oldSet, rec1)
	goneSet := "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
	stray(partName(Key("big", 7), goneSet, 0), 7, goneSet, nil)

	fp, err = s.Footprints(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	r1, r2 := fp.Releases[0].Records[0], fp.Releases[0].Records[1]
	if r1.Incomplete || r1.Missing != 0 || r1.Parts != 4 {
		t.Errorf("revision 1, whose parts are all there beside stray ones: %+v", r1)
	}
	if !r2.Incomplete || r2.Missing != 1 || r2.Parts != count {
		t.Errorf("revision 2, one of whose parts is gone: %+v, want incomplete, 1 of %d missing", r2, count)
	}
	if _, err := s.Get(ctx, "big", 2); err == nil {
		t.Error("the store reads revision 2, which its footprint says is incomplete")
	}
	want := []OrphanParts{
		{Namespace: "ns", Release: "big", Version: 1, Kind: "Secret", Set: oldSet[:16], Bytes: 2000,
			Objects: []string{partName(Key("big", 1), oldSet, 0), partName(Key("big", 1), oldSet, 1)}},
		{Namespace: "ns", Release: "big", Version: 7, Kind: "Secret", Set: goneSet[:16], Bytes: 1000, RecordGone: true,
			Objects: []string{partName(Key("big", 7), goneSet, 0)}},
	}
	if len(fp.Orphans) != len(want) {
		t.Fatalf("orphans: %+v, want %+v", fp.Orphans, want)
	}
	for i, o := range fp.Orphans {
		w := want[i]
		if o.Namespace != w.Namespace || o.Release != w.Release || o.Version != w.Version || o.Kind != w.Kind || o.Set != w.Set ||
			o.Bytes != w.Bytes || o.RecordGone != w.RecordGone || len(o.Objects) != len(w.Objects) || o.Objects[0] != w.Objects[0] {
			t.Errorf("orphan %d: %+v, want %+v", i, o, w)
		}
		l, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: o.Selector()})
		if err != nil || len(l.Items) != len(w.Objects) {
			t.Errorf("selector %q selects %d objects (%v), want the %d orphans", o.Selector(), len(l.Items), err, len(w.Objects))
		}
	}
}

// TestFootprintsOfConfigMaps checks that records kept in ConfigMaps are measured as those in
// Secrets are.
func TestFootprintsOfConfigMaps(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	s := NewConfigMapStore(c.CoreV1(), "ns")
	if err := s.Create(ctx, large("ns", "big", 1, 3<<20, 1<<10)); err != nil {
		t.Fatal(err)
	}
	fp, err := s.Footprints(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := c.CoreV1().ConfigMaps("ns").Get(ctx, Key("big", 1), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(fp.Releases) != 1 || fp.Releases[0].Kind != "ConfigMap" || fp.Releases[0].Newest().Bytes != len(cm.Data["release"]) ||
		fp.Releases[0].Newest().Parts != 4 || fp.Releases[0].Newest().PartBytes < 2<<20 || len(fp.Orphans) != 0 {
		t.Errorf("footprints: %+v", fp)
	}
}

// TestFootprintsInACluster checks, against the API server, that a split record's footprint counts
// the parts it owns; that a record whose part was deleted is incomplete; and that the parts of a
// record object deleted without its dependents (the garbage collector then only takes its
// ownerReference off them) are orphans whose record is gone.
func TestFootprintsInACluster(t *testing.T) {
	env := testenv.New(t)
	ctx := t.Context()
	s := NewSecretStore(env.Client.CoreV1(), env.Namespace)
	for v := 1; v <= 3; v++ {
		if err := s.Create(ctx, large(env.Namespace, "big", v, 3<<20, 1<<10)); err != nil {
			t.Fatal(err)
		}
	}
	secrets := env.Client.CoreV1().Secrets(env.Namespace)
	fp, err := s.Footprints(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(fp.Releases) != 1 || len(fp.Releases[0].Records) != 3 || len(fp.Orphans) != 0 {
		t.Fatalf("footprints: %+v", fp)
	}
	for _, r := range fp.Releases[0].Records {
		rec, err := secrets.Get(ctx, r.Object, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		owned, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: "owner=berth,name=big,version=" + strconv.Itoa(r.Version)})
		if err != nil {
			t.Fatal(err)
		}
		bytes := 0
		for _, p := range owned.Items {
			if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != rec.UID {
				t.Errorf("part %s is not owned by record object %s", p.Name, rec.Name)
			}
			bytes += len(p.Data[partDataKey])
		}
		if r.Bytes != len(rec.Data["release"]) || r.Parts != len(owned.Items) || r.Parts != 4 || r.PartBytes != bytes || r.Incomplete {
			t.Errorf("revision %d: %+v, want %d bytes in the object and %d in %d parts", r.Version, r, len(rec.Data["release"]), bytes, len(owned.Items))
		}
	}

	// Revision 3 loses a part; revision 1's record object is deleted, its parts orphaned.
	rec3, err := secrets.Get(ctx, Key("big", 3), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, sum, _ := partsOf(rec3.Annotations[PartsAnnotation])
	if err := secrets.Delete(ctx, partName(Key("big", 3), sum, 0), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := secrets.Delete(ctx, Key("big", 1), metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := secrets.Get(ctx, Key("big", 1), metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("waiting until the record object of revision 1 is gone: %v", err)
	}
	if fp, err = s.Footprints(ctx, false); err != nil {
		t.Fatal(err)
	}
	recs := fp.Releases[0].Records
	if len(recs) != 2 || recs[0].Incomplete || !recs[1].Incomplete || recs[1].Missing != 1 || recs[1].Version != 3 {
		t.Errorf("records after revision 1 went and revision 3 lost a part: %+v", recs)
	}
	if len(fp.Orphans) != 1 || fp.Orphans[0].Version != 1 || !fp.Orphans[0].RecordGone || len(fp.Orphans[0].Objects) != 4 {
		t.Errorf("orphans: %+v, want the 4 parts of revision 1", fp.Orphans)
	}
	if _, err := s.Last(ctx, "big"); err != nil {
		t.Errorf("the newest complete revision: %v", err)
	}
}
