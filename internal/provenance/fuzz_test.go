package provenance

import "testing"

func FuzzParseBundle(f *testing.F) {
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) { _, _ = ParseBundle(data) })
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":2,"layers":[{"digest":"sha256:00"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) { _, _ = ParseManifest(data) })
}

func FuzzParsePublicKey(f *testing.F) {
	f.Add([]byte("-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) { _, _, _ = ParsePublicKey(data) })
}

func FuzzParseTrustedRoot(f *testing.F) {
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}`))
	f.Fuzz(func(t *testing.T, data []byte) { _, _ = ParseTrustedRoot(data) })
}

func FuzzParseSimpleSigning(f *testing.F) {
	f.Add([]byte(`{"critical":{"image":{"docker-manifest-digest":"sha256:00"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) { _, _ = ParseSimpleSigning(data) })
}

func FuzzParseTrustPolicy(f *testing.F) {
	f.Add([]byte(`{"version":"1.0","trustPolicies":[{"name":"p","registryScopes":["*"],"signatureVerification":{"level":"strict"},"trustStores":["ca:s"],"trustedIdentities":["*"]}]}`))
	f.Add([]byte(`{"version":"1.0","trustPolicies":[{"name":"p","registryScopes":["r.io/a"],"signatureVerification":{"level":"strict","override":{"revocation":"log"}},"trustStores":["ca:s"],"trustedIdentities":["x509.subject: C=US, ST=WA, O=B"]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) { _, _ = ParseTrustPolicy(data) })
}

func FuzzParseTrustStoreCert(f *testing.F) {
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"))
	f.Add([]byte{0x30, 0x82, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) { _, _ = ParseTrustStoreCert(data) })
}
