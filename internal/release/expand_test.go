package release

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/berthdev/berth/internal/allocs"
)

// bomb is the gzip of a record's JSON whose manifest is n bytes of one letter.
func bomb(t testing.TB, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write([]byte(`{"name":"web","namespace":"ns","version":1,"manifest":"`))
	chunk := []byte(strings.Repeat("a", 1<<16))
	for i := 0; i < n; i += len(chunk) {
		zw.Write(chunk)
	}
	zw.Write([]byte(`"}`))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDecodeStopsAtItsExpansionLimit: a record whose gzip expands to 64 MiB is stopped at the
// controller's limit for its compressed size, named, and costs a bounded allocation; a record
// within the limit decodes.
func TestDecodeStopsAtItsExpansionLimit(t *testing.T) {
	ctx := context.Background()
	exp := ControllerExpansion()
	z := bomb(t, 64<<20)
	data := []byte(base64.StdEncoding.EncodeToString(z))
	var err error
	allocated := allocs.Of(func() { _, err = decode(ctx, exp, "Secret/ns/sh.helm.release.v1.web.v1", data) })
	var expanded *ExpansionError
	if !errors.As(err, &expanded) {
		t.Fatalf("a record of %d bytes expanding to 64 MiB: got %v, want an ExpansionError", len(z), err)
	}
	want := exp.Floor // 20 times a compressed size of about 64 KiB is less
	if expanded.Limit != want || expanded.Object != "Secret/ns/sh.helm.release.v1.web.v1" || expanded.What != "record" {
		t.Errorf("got %+v, want the limit %d and the object named", expanded, want)
	}
	if msg := err.Error(); !strings.Contains(msg, "more than 4194304 bytes once decompressed") || !strings.Contains(msg, "Secret/ns/sh.helm.release.v1.web.v1") {
		t.Errorf("message %q does not name the object and the limit", msg)
	}
	if allocated > 4*want+2*int64(len(data))+1<<20 {
		t.Errorf("decoding allocated %d bytes for a limit of %d", allocated, want)
	}
	small := []byte(base64.StdEncoding.EncodeToString(bomb(t, 1<<20)))
	if rel, err := decode(ctx, exp, "Secret/ns/small", small); err != nil || rel.Name != "web" || len(rel.Manifest) < 1<<20 {
		t.Errorf("a record expanding to 1 MiB: %v", err)
	}
}

// TestBudgetIsShared: decodes take their weight from one budget before they start, and give it
// back; a decode that cannot have it waits within its context.
func TestBudgetIsShared(t *testing.T) {
	b := NewBudget(10)
	done, err := b.take(context.Background(), 8)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.take(ctx, 4); err == nil {
		t.Error("took 4 of a budget of 10 of which 8 are taken")
	}
	done()
	if done, err := b.take(context.Background(), 100); err != nil {
		t.Errorf("a weight larger than the budget takes all of it: %v", err)
	} else {
		done()
	}
}

// TestForgedRecordIsNamed: a record object whose record is another release's, or another
// revision's, is not read as the release's: Last names it, List leaves it out.
func TestForgedRecordIsNamed(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	s := NewSecretStore(cs.CoreV1(), "ns")
	if err := s.Create(ctx, rev("ns", "other", 3, StatusDeployed)); err != nil {
		t.Fatal(err)
	}
	orig, err := cs.CoreV1().Secrets("ns").Get(ctx, "sh.helm.release.v1.other.v3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, version, field string }{{"web", "3", "name"}, {"other", "2", "version"}} {
		forged := orig.DeepCopy()
		forged.ObjectMeta = metav1.ObjectMeta{Namespace: "ns", Name: "sh.helm.release.v1." + tt.name + ".v" + tt.version,
			Labels: map[string]string{"owner": "helm", "name": tt.name, "version": tt.version, "status": "deployed"}}
		if _, err := cs.CoreV1().Secrets("ns").Create(ctx, forged, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := NewSecretStore(cs.CoreV1(), "ns").Get(ctx, tt.name, mustAtoi(tt.version))
		var mismatch *MismatchError
		if !errors.As(err, &mismatch) || mismatch.Field != tt.field || mismatch.Object != "Secret/ns/"+forged.Name {
			t.Errorf("%s: got %v, want a MismatchError of its %s", forged.Name, err, tt.field)
		}
	}
	all, err := NewSecretStore(cs.CoreV1(), "ns").List(ctx, ListOptions{})
	if err != nil || len(all) != 1 || all[0].Name != "other" || all[0].Version != 3 {
		t.Errorf("List: %d releases (%v), want other's alone", len(all), err)
	}
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
