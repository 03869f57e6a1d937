package release

import (
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkEncodeSplit measures writing a 3 MiB record as a record object and its parts.
func BenchmarkEncodeSplit(b *testing.B) {
	r := large("ns", "big", 1, 3<<20, 64<<10)
	for b.Loop() {
		if _, err := encodeWithin(r, MaxObjectData); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFitsSmall measures the check of a small record's size, which encodes nothing.
func BenchmarkFitsSmall(b *testing.B) {
	r := rev("ns", "small", 1, StatusDeployed)
	for b.Loop() {
		if err := NewEncoder().Fits(r); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFitsKeepsTheEncoding: a record that takes more than one object uncompressed is encoded
// once for Fits and the write that follows.
func TestFitsKeepsTheEncoding(t *testing.T) {
	r := rev("ns", "compressible", 1, StatusPendingInstall)
	r.Manifest = strings.Repeat("kind: ConfigMap\ndata: {a: b}\n---\n", (2<<20)/32)
	c := NewEncoder()
	if err := c.Fits(r); err != nil {
		t.Fatal(err)
	}
	kept := c.last.get(recordKey(t, r))
	if kept == nil {
		t.Fatal("Fits kept no encoding of a 2 MiB record")
	}
	e, err := c.encode(r)
	if err != nil || e != kept || len(e.parts) != 0 {
		t.Errorf("encode after Fits = %p, %v (%d parts), want the kept encoding %p", e, err, len(e.parts), kept)
	}
	r.Info.Status = StatusDeployed
	if e, err := c.encode(r); err != nil || e == kept {
		t.Errorf("a changed record was given the encoding kept of the one before it (%v)", err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recordKey is the key the Encoder keeps the encoding of r's record by.
func recordKey(t *testing.T, r *Release) [sha256.Size]byte {
	t.Helper()
	j, err := (&jsonCache{}).recordJSON(r)
	if err != nil {
		t.Fatal(err)
	}
	return j.key()
}

// TestForkKeepsItsOwnEncodings: a fork takes turns with its Encoder for bulky records and keeps
// what it encoded to itself.
func TestForkKeepsItsOwnEncodings(t *testing.T) {
	c := NewEncoder()
	f := c.Fork()
	if f.bulky != c.bulky {
		t.Error("a fork does not share its Encoder's turn for bulky records")
	}
	r := rev("ns", "compressible", 1, StatusPendingInstall)
	r.Manifest = strings.Repeat("kind: ConfigMap\ndata: {a: b}\n---\n", (2<<20)/32)
	if err := f.Fits(r); err != nil {
		t.Fatal(err)
	}
	if f.last.get(recordKey(t, r)) == nil {
		t.Fatal("the fork kept no encoding of a 2 MiB record")
	}
	if c.last.get(recordKey(t, r)) != nil {
		t.Error("the Encoder forked keeps the encoding its fork made")
	}
	if (*Encoder)(nil).Fork() != nil {
		t.Error("a nil Encoder forked one that is not nil")
	}
}

// BenchmarkEncodeSmall measures encoding the record of a small chart (some 10 KiB of JSON), as
// every operation on one writes two or three.
func BenchmarkEncodeSmall(b *testing.B) {
	r := rev("ns", "small", 1, StatusDeployed)
	r.Manifest = strings.Repeat("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\ndata:\n  key: value value value\n---\n", 60)
	for b.Loop() {
		if _, err := NewEncoder().encode(r); err != nil {
			b.Fatal(err)
		}
	}
}
