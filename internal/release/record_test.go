package release

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"helm.sh/helm/v4/pkg/storage/driver"
)

// TestRecordsAsHelmWritesThem checks that a record berth writes is the object Helm's driver
// writes for the same revision (name, type, labels), on create and on update, and that Helm's
// driver reads it back as it was.
func TestRecordsAsHelmWritesThem(t *testing.T) {
	ctx := context.Background()
	ours, helms := fake.NewClientset().CoreV1(), fake.NewClientset().CoreV1()
	s := NewSecretStore(ours, "ns")
	helm := driver.NewSecrets(helms.Secrets("ns"))
	r := rev("ns", "app", 2, StatusPendingUpgrade)
	r.Labels = map[string]string{"team": "blue", "status": "not the release's own"}
	if err := s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := helm.Create(Key("app", 2), r); err != nil {
		t.Fatal(err)
	}
	same := func(when string) {
		t.Helper()
		got, err := ours.Secrets("ns").Get(ctx, Key("app", 2), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := helms.Secrets("ns").Get(ctx, Key("app", 2), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Type != want.Type || !slices.Equal(slices.Sorted(maps.Keys(got.Labels)), slices.Sorted(maps.Keys(want.Labels))) {
			t.Errorf("%s: type %q, labels %v; Helm's driver writes type %q, labels %v", when, got.Type, got.Labels, want.Type, want.Labels)
		}
		for _, k := range []string{"name", "owner", "status", "version", "team"} {
			if got.Labels[k] != want.Labels[k] {
				t.Errorf("%s: label %s = %q, Helm's driver writes %q", when, k, got.Labels[k], want.Labels[k])
			}
		}
		read, err := driver.NewSecrets(ours.Secrets("ns")).Get(Key("app", 2))
		if err != nil {
			t.Fatalf("%s: Helm's driver reads berth's record: %v", when, err)
		}
		back, err := toV1(read)
		if err != nil {
			t.Fatal(err)
		}
		if back.Info.Status != r.Info.Status || back.Manifest != r.Manifest || back.Config["replicas"] != r.Config["replicas"] ||
			len(back.Hooks) != 1 || back.Chart.Metadata.Version != "1.2.3" {
			t.Errorf("%s: Helm's driver read back %+v, want %+v", when, back, r)
		}
	}
	same("created")
	r.Info.Status = StatusDeployed
	if err := s.Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := helm.Update(Key("app", 2), r); err != nil {
		t.Fatal(err)
	}
	same("updated")
	if err := s.Create(ctx, r); !errors.Is(err, ErrExists) {
		t.Errorf("Create of a recorded revision = %v, want ErrExists", err)
	}
}

// TestConfigMapRecordsAsHelmWritesThem is TestRecordsAsHelmWritesThem's read-back for the
// configmap driver.
func TestConfigMapRecordsAsHelmWritesThem(t *testing.T) {
	ctx := context.Background()
	core := fake.NewClientset().CoreV1()
	r := rev("ns", "app", 1, StatusDeployed)
	if err := NewConfigMapStore(core, "ns").Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	read, err := driver.NewConfigMaps(core.ConfigMaps("ns")).Get(Key("app", 1))
	if err != nil {
		t.Fatalf("Helm's driver reads berth's record: %v", err)
	}
	if back, _ := toV1(read); back == nil || back.Manifest != r.Manifest || back.Info.Status != StatusDeployed {
		t.Errorf("Helm's driver read back %+v", back)
	}
	cm, err := core.ConfigMaps("ns").Get(ctx, Key("app", 1), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels["owner"] != "helm" || cm.Labels["status"] != "deployed" || cm.Labels["version"] != "1" || cm.Labels["createdAt"] == "" {
		t.Errorf("labels = %v, want Helm's", cm.Labels)
	}
}

// TestSmallRecordAtBestSpeed checks that a record that would fit in one object even
// uncompressed is gzipped at the fastest level (its gzip header says so), and one that would not
// at the default level.
func TestSmallRecordAtBestSpeed(t *testing.T) {
	// gzipLevel is the level a record's gzip header names: 4 is the fastest, 2 the best, 0 any other.
	gzipLevel := func(data []byte) byte {
		t.Helper()
		z, err := base64.StdEncoding.DecodeString(string(data))
		if err != nil || len(z) < 10 {
			t.Fatalf("record data is not gzip in base64: %v", err)
		}
		return z[8]
	}
	r := rev("ns", "app", 1, StatusDeployed)
	e, err := NewEncoder().encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := gzipLevel(e.data); got != 4 {
		t.Errorf("a small record's gzip header says %d, want 4 (the fastest level)", got)
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	for b.Len() < MaxObjectData {
		fmt.Fprintf(&b, "key-%d: %d\n", rnd.IntN(1000), rnd.IntN(1000))
	}
	r.Manifest = b.String()
	if e, err = NewEncoder().encode(r); err != nil {
		t.Fatal(err)
	}
	if len(e.parts) > 0 {
		t.Fatalf("a record of %d bytes of manifest was split", b.Len())
	}
	if got := gzipLevel(e.data); got != 0 {
		t.Errorf("a record over one object uncompressed has gzip header %d, want 0 (the default level)", got)
	}
}

// TestRecordAtBestCompressionWhenItMustFit checks that a record the default level leaves over
// the limit is written at best compression, as Helm writes it.
func TestRecordAtBestCompressionWhenItMustFit(t *testing.T) {
	r := rev("ns", "app", 1, StatusDeployed)
	words := strings.Fields("apiVersion kind metadata name labels annotations spec data replicas selector template containers image ports env value")
	rnd := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for range 50000 {
		b.WriteString(words[rnd.IntN(len(words))] + " ")
	}
	r.Manifest = b.String()
	e, err := NewEncoder().encode(r)
	if err != nil {
		t.Fatal(err)
	}
	quick := e.data
	if e, err = encodeWithin(r, len(quick)-1); err != nil {
		t.Fatal(err)
	}
	best := e.data
	if len(e.parts) > 0 || len(best) >= len(quick) {
		t.Fatalf("over the limit, the record is %d bytes, at the default level %d", len(best), len(quick))
	}
	c := fake.NewClientset().CoreV1()
	if _, err := c.Secrets("ns").Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: Key("app", 1), Labels: recordLabels(r, false)},
		Data:       map[string][]byte{"release": []byte(best)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if back, err := NewSecretStore(c, "ns").Get(context.Background(), "app", 1); err != nil || back.Manifest != r.Manifest {
		t.Errorf("the best-compressed record reads back as %v, %v", back, err)
	}
}

// TestPruneDecodesNothing checks that Prune goes by the records' labels: a record that cannot be
// decoded is counted and pruned like the others, and the deployed one is kept.
func TestPruneDecodesNothing(t *testing.T) {
	ctx := context.Background()
	core := fake.NewClientset().CoreV1()
	s := NewSecretStore(core, "ns")
	for v := 1; v <= 8; v++ {
		status := StatusSuperseded
		if v == 2 {
			status = StatusDeployed
		}
		if err := s.Create(ctx, rev("ns", "app", v, status)); err != nil {
			t.Fatal(err)
		}
	}
	broken, err := core.Secrets("ns").Get(ctx, Key("app", 3), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	broken.Data["release"] = []byte("not a record")
	if _, err := core.Secrets("ns").Update(ctx, broken, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted, err := s.Prune(ctx, "app", 4)
	if err != nil || !slices.Equal(deleted, []int{1, 3, 4, 5}) {
		t.Fatalf("Prune = %v, %v; want [1 3 4 5]: the oldest but the deployed 2", deleted, err)
	}
	left, err := core.Secrets("ns").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range left.Items {
		names = append(names, o.Name)
	}
	slices.Sort(names)
	if want := []string{Key("app", 2), Key("app", 6), Key("app", 7), Key("app", 8)}; !slices.Equal(names, want) {
		t.Errorf("records left = %v, want %v", names, want)
	}
}
