package release

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"helm.sh/helm/v4/pkg/chart/common"
	helmrelease "helm.sh/helm/v4/pkg/release"
	"helm.sh/helm/v4/pkg/storage/driver"

	"github.com/berthdev/berth/internal/allocs"
)

// large is revision version of release name with a chart of files that compress to about size
// bytes in all, and a manifest of manifestSize.
func large(ns, name string, version, size, manifestSize int) *Release {
	r := rev(ns, name, version, StatusDeployed)
	rnd := rand.New(rand.NewPCG(uint64(version), uint64(size)))
	noise := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rnd.UintN(256))
		}
		return b
	}
	for i := range 4 {
		r.Chart.Templates = append(r.Chart.Templates, &common.File{Name: "templates/t" + string(rune('a'+i)) + ".yaml", Data: noise(size / 8)})
		r.Chart.Files = append(r.Chart.Files, &common.File{Name: "files/f" + string(rune('a'+i)) + ".json", Data: noise(size / 8)})
	}
	var m strings.Builder
	for m.Len() < manifestSize {
		m.WriteString("---\n# Source: demo/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  k: " + hex.EncodeToString(noise(256)) + "\n")
	}
	r.Manifest = m.String()
	return r
}

func jsonOf(t *testing.T, r *Release) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSplitRecordRoundTrips checks that a record over one object's limit moves the chart's
// templates and files to parts, then the manifest when it must, that Helm's driver reads the
// record object alone, and that the store reads back the whole release byte for byte.
func TestSplitRecordRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		name           string
		chart, mfst    int
		parts          int
		manifestMoved  bool
		storeConfigMap bool
	}{
		{name: "chart", chart: 3 << 20, mfst: 1 << 10, parts: 4},
		{name: "configmap", chart: 3 << 20, mfst: 1 << 10, parts: 4, storeConfigMap: true},
		{name: "manifest", chart: 1 << 20, mfst: 4 << 20, parts: 3, manifestMoved: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := fake.NewClientset().CoreV1()
			s := NewSecretStore(c, "ns")
			if tc.storeConfigMap {
				s = NewConfigMapStore(c, "ns")
			}
			r := large("ns", "big", 1, tc.chart, tc.mfst)
			want := jsonOf(t, r)
			if err := s.Create(ctx, r); err != nil {
				t.Fatal(err)
			}
			if jsonOf(t, r) != want {
				t.Fatal("Create changed the release it recorded")
			}
			back, err := s.Get(ctx, "big", 1)
			if err != nil {
				t.Fatal(err)
			}
			back.Labels = r.Labels
			if got := jsonOf(t, back); got != want {
				i := 0
				for i < min(len(got), len(want)) && got[i] == want[i] {
					i++
				}
				t.Errorf("the release read back is not the one written: from byte %d, %.200q, want %.200q", i, got[i:], want[i:])
			}
			it, err := s.records("ns").get(ctx, Key("big", 1))
			if err != nil {
				t.Fatal(err)
			}
			if len(it.data) > MaxObjectData {
				t.Errorf("the record object holds %d bytes", len(it.data))
			}
			count, _, err := partsOf(it.annotations[PartsAnnotation])
			if err != nil || count != tc.parts {
				t.Errorf("%s = %q (%v), want %d parts", PartsAnnotation, it.annotations[PartsAnnotation], err, tc.parts)
			}
			var helm driver.Driver = driver.NewSecrets(c.Secrets("ns"))
			if tc.storeConfigMap {
				helm = driver.NewConfigMaps(c.ConfigMaps("ns"))
			}
			hr, err := helm.Get(Key("big", 1))
			if err != nil {
				t.Fatalf("Helm's driver cannot read the record: %v", err)
			}
			h, _ := toV1(hr)
			if h.Info.Status != StatusDeployed || h.Chart.Metadata.Name != "demo" || h.Chart.Templates != nil {
				t.Errorf("Helm reads status %s, chart %v, %d templates", h.Info.Status, h.Chart.Metadata, len(h.Chart.Templates))
			}
			if got := h.Manifest == r.Manifest; got == tc.manifestMoved {
				t.Errorf("Helm reads the manifest: %v, want %v", got, !tc.manifestMoved)
			}
			listed, err := helm.List(func(helmrelease.Releaser) bool { return true })
			if err != nil || len(listed) != 1 {
				t.Errorf("Helm's driver lists %d releases (%v), want the record alone, not its parts", len(listed), err)
			}
		})
	}
}

// partObjects counts the part Secrets in ns.
func partObjects(t *testing.T, c *fake.Clientset) int {
	t.Helper()
	l, err := c.CoreV1().Secrets("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range l.Items {
		if s.Type == PartSecretType {
			n++
		}
	}
	return n
}

// writes counts the creates, updates and deletes of parts a clientset was asked for.
func writes(c *fake.Clientset) (creates, deletes int) {
	for _, a := range c.Actions() {
		switch a := a.(type) {
		case k8stesting.CreateAction:
			if s, ok := a.GetObject().(*corev1.Secret); ok && s.Type == PartSecretType {
				creates++
			}
		case k8stesting.DeleteAction:
			if strings.Count(a.GetName(), ".") > 5 {
				deletes++
			}
		}
	}
	return creates, deletes
}

// TestSplitRecordUpdates checks that a new status rewrites a split record's object alone, and
// that deleting, pruning and purging revisions delete their parts.
func TestSplitRecordUpdates(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	s := NewSecretStore(c.CoreV1(), "ns")
	r := large("ns", "big", 1, 2<<20, 1<<10)
	r.Info.Status = StatusPendingInstall
	if err := s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	n := partObjects(t, c)
	if n < 2 {
		t.Fatalf("%d parts", n)
	}
	c.ClearActions()
	r.Info.Status = StatusDeployed
	if err := s.Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	// A store that has not seen the record reads its object once, and writes no part either.
	if err := NewSecretStore(c.CoreV1(), "ns").Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	if creates, deletes := writes(c); creates != 0 || deletes != 0 || partObjects(t, c) != n {
		t.Errorf("updating the status wrote %d parts and deleted %d; %d parts are left, want %d", creates, deletes, partObjects(t, c), n)
	}
	if back, err := s.Get(ctx, "big", 1); err != nil || back.Info.Status != StatusDeployed || len(back.Chart.Files) != 4 {
		t.Fatalf("read back %v (%v)", back, err)
	}

	for v := 2; v <= 4; v++ {
		r := large("ns", "big", v, 2<<20, 1<<10)
		r.Info.Status = StatusSuperseded
		if err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if pruned, err := s.Prune(ctx, "big", 2); err != nil || len(pruned) != 2 {
		t.Fatalf("pruned %v (%v)", pruned, err)
	}
	if got := partObjects(t, c); got != 2*n {
		t.Errorf("after pruning to 2 revisions, %d parts are left, want %d", got, 2*n)
	}
	if _, err := s.Delete(ctx, "big", 4); err != nil {
		t.Fatal(err)
	}
	if got := partObjects(t, c); got != n {
		t.Errorf("after deleting one of 2 revisions, %d parts are left, want %d", got, n)
	}
	if _, err := s.Purge(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	if got := partObjects(t, c); got != 0 {
		t.Errorf("after purging, %d parts are left", got)
	}
}

// TestIncompleteRecordIsNoRelease checks that a record whose parts are not all written is never
// read as a release, and that recording its revision again replaces it.
func TestIncompleteRecordIsNoRelease(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	s := NewSecretStore(c.CoreV1(), "ns")
	r1 := rev("ns", "big", 1, StatusDeployed)
	if err := s.Create(ctx, r1); err != nil {
		t.Fatal(err)
	}
	r2 := large("ns", "big", 2, 2<<20, 1<<10)
	r2.Info.Status = StatusPendingUpgrade
	if err := s.Create(ctx, r2); err != nil {
		t.Fatal(err)
	}
	it, err := s.records("ns").get(ctx, Key("big", 2))
	if err != nil {
		t.Fatal(err)
	}
	_, sum, _ := partsOf(it.annotations[PartsAnnotation])
	if err := c.CoreV1().Secrets("ns").Delete(ctx, partName(Key("big", 2), sum, 1), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s = NewSecretStore(c.CoreV1(), "ns") // one that has not seen it whole
	var incomplete *IncompleteRecordError
	if _, err := s.Get(ctx, "big", 2); !errors.As(err, &incomplete) || incomplete.Version != 2 {
		t.Errorf("Get of the incomplete revision: %v, want an IncompleteRecordError", err)
	}
	if last, err := s.Last(ctx, "big"); err != nil || last.Version != 1 {
		t.Errorf("Last = %v (%v), want revision 1", last, err)
	}
	if h, err := s.History(ctx, "big"); err != nil || len(h) != 1 {
		t.Errorf("History = %v (%v), want revision 1 alone", versions(h), err)
	}
	if err := s.Create(ctx, r2); err != nil {
		t.Fatalf("recording revision 2 again: %v", err)
	}
	if back, err := s.Get(ctx, "big", 2); err != nil || jsonOf(t, back) != jsonOf(t, withLabels(r2, back.Labels)) {
		t.Errorf("revision 2 recorded again reads back as %v (%v)", back != nil, err)
	}
	if err := s.Create(ctx, r2); !errors.Is(err, ErrExists) {
		t.Errorf("recording a complete revision again: %v, want ErrExists", err)
	}
}

func withLabels(r *Release, l map[string]string) *Release {
	c := *r
	c.Labels = l
	return &c
}

// FuzzDecodeRecord feeds the record decoder, the parts annotation's parser and the joining of
// parts with what anyone who can write Secrets in a namespace could leave there: whatever they
// hold, decoding allocates within a bound of the expansion limit.
func FuzzDecodeRecord(f *testing.F) {
	r := large("ns", "big", 1, 4<<10, 1<<10)
	e, err := encodeWithin(r, 2<<10)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(e.data), e.partsAnnotation(), bytes.Join(e.parts, nil))
	f.Add([]byte("H4sI"), "1/00", []byte{0x1f, 0x8b, 0x08})
	f.Add([]byte(base64.StdEncoding.EncodeToString(bomb(f, 8<<20))), "1/00", bomb(f, 8<<20))
	exp := Expansion{Max: 1 << 20, Ratio: 20, Floor: 64 << 10}
	f.Fuzz(func(t *testing.T, data []byte, ann string, joined []byte) {
		ctx := context.Background()
		allocated := allocs.Of(func() {
			rel, err := decode(ctx, exp, "Secret/ns/fuzz", data)
			if err != nil {
				return
			}
			count, sum, err := partsOf(ann)
			if err != nil {
				return
			}
			parts := make([][]byte, count)
			for i := range count {
				parts[i] = joined[len(joined)*i/count : len(joined)*(i+1)/count]
			}
			_ = join(ctx, exp, "Secret/ns/fuzz", rel, parts, sum)
		})
		// Twice the input (base64, the joined parts), the JSON buffer of each stream as it
		// grows to its limit, and what it decodes to.
		if bound := 2*int64(len(data)+len(joined)) + 8*exp.Max + 1<<20; allocated > bound {
			t.Fatalf("decoding %d bytes and %d of parts allocated %d bytes, more than %d", len(data), len(joined), allocated, bound)
		}
	})
}

// TestReadingOneRevisionReadsItsPartsAlone checks that Get and Last of one split revision list
// the parts of that revision alone, not those of every revision of the release (nor those of a
// revision with the same contents), and that History still reads every revision whole.
func TestReadingOneRevisionReadsItsPartsAlone(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	s := NewSecretStore(cs.CoreV1(), "ns")
	for v := 1; v <= 3; v++ {
		if err := s.Create(ctx, large("ns", "big", v, 3<<20, 1<<10)); err != nil {
			t.Fatal(err)
		}
	}
	// Revision 4 has revision 3's contents, as a no-op upgrade or a rollback records them.
	same := large("ns", "big", 3, 3<<20, 1<<10)
	same.Version = 4
	if err := s.Create(ctx, same); err != nil {
		t.Fatal(err)
	}
	// partsRead are the revisions of the parts that the lists made since mark select.
	partsRead := func(mark int) map[string]bool {
		t.Helper()
		actions := cs.Actions()[mark:]
		all, err := cs.CoreV1().Secrets("ns").List(ctx, metav1.ListOptions{LabelSelector: "owner=berth"})
		if err != nil {
			t.Fatal(err)
		}
		read := map[string]bool{}
		for _, a := range actions {
			l, ok := a.(k8stesting.ListAction)
			if !ok || a.GetResource().Resource != "secrets" {
				continue
			}
			for _, p := range all.Items {
				if l.GetListRestrictions().Labels.Matches(labels.Set(p.Labels)) {
					read[p.Labels["version"]] = true
				}
			}
		}
		return read
	}
	for _, read := range []struct {
		name string
		do   func() (*Release, error)
	}{
		{"Get", func() (*Release, error) { return s.Get(ctx, "big", 2) }},
		{"Get", func() (*Release, error) { return s.Get(ctx, "big", 3) }},
		{"Last", func() (*Release, error) { return s.Last(ctx, "big") }},
	} {
		mark := len(cs.Actions())
		rel, err := read.do()
		if err != nil {
			t.Fatalf("%s: %v", read.name, err)
		}
		if len(rel.Chart.Templates) != 4 {
			t.Errorf("%s: %d templates read back, want 4", read.name, len(rel.Chart.Templates))
		}
		want := map[string]bool{strconv.Itoa(rel.Version): true}
		if got := partsRead(mark); !maps.Equal(got, want) {
			t.Errorf("%s of revision %d read the parts of revisions %v, want %v", read.name, rel.Version, got, want)
		}
	}
	mark := len(cs.Actions())
	h, err := s.History(ctx, "big")
	if err != nil || len(h) != 4 {
		t.Fatalf("History: %d revisions, %v", len(h), err)
	}
	for _, rel := range h {
		if len(rel.Chart.Templates) != 4 {
			t.Errorf("History: revision %d has %d templates, want 4", rel.Version, len(rel.Chart.Templates))
		}
	}
	if got := partsRead(mark); len(got) != 4 {
		t.Errorf("History read the parts of revisions %v, want all 4", got)
	}
}

// TestSharedEncoderEncodesASplitRecordOnce checks that stores sharing an Encoder encode a split
// record once for Fits and the write that follows, and that stores with an Encoder each do not
// share it.
func TestSharedEncoderEncodesASplitRecordOnce(t *testing.T) {
	r := large("ns", "big", 1, 3<<20, 1<<10)
	enc := NewEncoder()
	a := NewSecretStore(fake.NewClientset().CoreV1(), "ns").Encoding(enc)
	b := NewSecretStore(fake.NewClientset().CoreV1(), "ns").Encoding(enc)
	if err := a.Fits(r); err != nil {
		t.Fatal(err)
	}
	first, err := enc.encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.parts) == 0 {
		t.Fatal("the record was not split; the test needs one that is")
	}
	if err := b.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if again, _ := b.encoder.encode(r); again != first {
		t.Error("a store sharing the Encoder encoded the split record again")
	}
	other := NewSecretStore(fake.NewClientset().CoreV1(), "ns")
	if other.encoder.last.get(recordKey(t, r)) != nil {
		t.Error("a store of its own shares another's last split record")
	}
}

// TestGzipWriterKeptThroughCollections: a writer given back is the next one taken, however many
// garbage collections ran in between (a pool alone is emptied by two), so that the records of
// one operation clear gzip's megabyte of state once.
func TestGzipWriterKeptThroughCollections(t *testing.T) {
	const level = 7 // no record is written at it: no other test takes this level's writer
	z, err := gzipWriter(io.Discard, level)
	if err != nil {
		t.Fatal(err)
	}
	putGzipWriter(z, level)
	runtime.GC()
	runtime.GC()
	got, err := gzipWriter(io.Discard, level)
	if err != nil {
		t.Fatal(err)
	}
	defer putGzipWriter(got, level)
	if got != z {
		t.Error("a new writer after two collections, want the one given back")
	}
	var out bytes.Buffer
	got.Reset(&out)
	if _, err := got.Write([]byte(`{"name":"r"}`)); err != nil || got.Close() != nil {
		t.Fatal(err)
	}
	r, err := gzip.NewReader(&out)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(r); err != nil || string(b) != `{"name":"r"}` {
		t.Errorf("the kept writer wrote %q (%v)", b, err)
	}
}

// TestEncodeAheadTakenByItsWrite: a record encoded ahead is what the write of the same record
// sends, once; a write of another record (the same revision, another status) encodes its own.
func TestEncodeAheadTakenByItsWrite(t *testing.T) {
	c := NewEncoder()
	pending := rev("ns", "web", 2, StatusPendingUpgrade)
	c.EncodeAhead(pending)
	c.EncodeAhead(pending) // the same record: one encoding
	if n := len(c.ahead.kept); n != 1 {
		t.Fatalf("encodings kept: %d, want 1", n)
	}
	deployed := rev("ns", "web", 2, StatusDeployed)
	e, err := c.encode(deployed)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.ahead.kept); n != 1 {
		t.Errorf("another record took the encoding ahead: %d kept, want 1", n)
	}
	if got := decodedOf(t, e); got.Info.Status != StatusDeployed {
		t.Errorf("another record's write sent status %s, want %s", got.Info.Status, StatusDeployed)
	}
	e, err = c.encode(pending)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.ahead.kept); n != 0 {
		t.Errorf("the write left its encoding ahead kept: %d, want none", n)
	}
	if got, want := encoded(t, decodedOf(t, e)), encoded(t, pending); got != want {
		t.Errorf("record encoded ahead decodes to\n%s\nwant\n%s", got, want)
	}
	for i := range aheadKept + 2 {
		c.EncodeAhead(rev("ns", "web", 3+i, StatusPendingUpgrade))
	}
	if n := len(c.ahead.kept); n != aheadKept {
		t.Errorf("encodings kept: %d, want the newest %d", n, aheadKept)
	}
}

// decodedOf is the release the record object data of e holds.
func decodedOf(t *testing.T, e *encoding) *Release {
	t.Helper()
	got, err := decode(t.Context(), DefaultExpansion(), "record", e.data)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
