package sopsvalues_test

import (
	"errors"
	"testing"

	"github.com/berthdev/berth/internal/sopsvalues"
)

// FuzzDecrypt reads any document as a tenant may write one: detection never panics, and
// decryption of what is detected, with no key at hand, always fails with an *Error and gives
// nothing.
func FuzzDecrypt(f *testing.F) {
	f.Add([]byte("sops:\n  mac: ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]\n  lastmodified: \"2026-01-01T00:00:00Z\"\n  age:\n    - recipient: age1x\n      enc: abc\n  version: 3.13.3\n"))
	f.Add([]byte(`{"a":"ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]","sops":{"mac":"m","lastmodified":"2026-01-01T00:00:00Z","version":"3"}}`))
	f.Add([]byte("replicas: 3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		format, ok := sopsvalues.Detect(data)
		if !ok {
			return
		}
		out, err := sopsvalues.Decrypt(data, format, mustAgeKeys(t))
		var se *sopsvalues.Error
		if !errors.As(err, &se) || out != nil {
			t.Fatalf("decrypt with no key: %q, %v; want no output and an *Error", out, err)
		}
	})
}

// mustAgeKeys are keys that decrypt nothing: no identity, nothing of the environment.
func mustAgeKeys(t *testing.T) sopsvalues.Keys {
	k, err := sopsvalues.AgeKeys()
	if err != nil {
		t.Fatal(err)
	}
	return k
}
