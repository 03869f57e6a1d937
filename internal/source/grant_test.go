package source

import (
	"crypto/sha256"
	"testing"
)

// TestGrantKeysDoNotCollide: the grants of fetches that differ in their repository, scheme,
// credentials or TLS settings are told apart, whatever their parts hold (separators included).
func TestGrantKeysDoNotCollide(t *testing.T) {
	key := sha256.Sum256([]byte("chart"))
	opts := func(user, pw string, plain bool, ca string) RegistryOptions {
		return RegistryOptions{Username: user, Password: pw, PlainHTTP: plain, Data: TLSData{CA: []byte(ca)}}
	}
	grant := func(name string, o RegistryOptions) string {
		return grantKey("/cache", key, registryURL(name, o), registryAccess(o))
	}
	cases := map[string]string{
		"a's registry with a's credentials":   grant("a.example/x/web", opts("a", "pw", false, "")),
		"b's registry, anonymous":             grant("b.example/x/web", opts("", "", false, "")),
		"a's registry, anonymous":             grant("a.example/x/web", opts("", "", false, "")),
		"a's registry, another password":      grant("a.example/x/web", opts("a", "other", false, "")),
		"a's registry over plain HTTP":        grant("a.example/x/web", opts("a", "pw", true, "")),
		"a's registry with another CA":        grant("a.example/x/web", opts("a", "pw", false, "ca")),
		"another repository":                  grant("a.example/x/web2", opts("a", "pw", false, "")),
		"a username holding a separator":      grant("a.example/x/web", opts("a\x00", "pw", false, "")),
		"a repository holding the separator":  grant("a.example/x/web\x00a", opts("", "pw", false, "")),
		"a repository holding a length colon": grant("a.example/x/web1:a", opts("", "pw", false, "")),
	}
	seen := map[string]string{}
	for name, k := range cases {
		if other, ok := seen[k]; ok {
			t.Errorf("%s and %s have the same grant", name, other)
		}
		seen[k] = name
	}
	if grant("a.example/x/web", opts("a", "pw", false, "")) != cases["a's registry with a's credentials"] {
		t.Error("one fetch's grant differs from itself")
	}
}
