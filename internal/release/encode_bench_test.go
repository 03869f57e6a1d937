package release

import "testing"

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
