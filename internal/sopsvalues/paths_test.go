package sopsvalues_test

import (
	"slices"
	"testing"

	"github.com/berthdev/berth/internal/sopsvalues"
	"github.com/berthdev/berth/test/berthtest"
)

func TestEncryptedPaths(t *testing.T) {
	key := berthtest.NewAgeKey(t)
	doc := "db:\n  user: app\n  password: Hunter2\n  host_unencrypted: db.local\nhosts: [a, b]\na.b: 1\nempty: {}\n"
	enc := berthtest.EncryptSOPS(t, []byte(doc), false, key.Recipient)
	var got []string
	for _, p := range sopsvalues.EncryptedPaths(enc) {
		got = append(got, p.String())
	}
	want := []string{`a\.b`, "db.password", "db.user", "hosts"}
	if !slices.Equal(got, want) {
		t.Fatalf("EncryptedPaths = %q, want %q", got, want)
	}
	if p := sopsvalues.EncryptedPaths([]byte(doc)); len(p) != 0 {
		t.Fatalf("a plain document has encrypted paths %q", p)
	}
}
