package provenance

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/notaryproject/notation-core-go/signature"
	"github.com/notaryproject/notation-go"
	notationregistry "github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/signer"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/memory"
)

// testCA is a root CA made by the test and the code-signing leaf it issued, as notation requires
// them: a CA with certSign usage, a leaf with digitalSignature usage and the codeSigning EKU.
type testCA struct {
	root, leaf *x509.Certificate
	key        *ecdsa.PrivateKey
}

var signerSubject = pkix.Name{CommonName: "berth test signer", Organization: []string{"Berth"}, Locality: []string{"Seattle"}, Province: []string{"WA"}, Country: []string{"US"}}

func newTestCA(t *testing.T, name string) testCA {
	t.Helper()
	rootKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	rootTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " root", Organization: []string{"Berth"}, Country: []string{"US"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	rootDER, err := x509.CreateCertificate(rand.Reader, rootTmpl, rootTmpl, &rootKey.PublicKey, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := x509.ParseCertificate(rootDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: signerSubject, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, root, &leafKey.PublicKey, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(leafDER)
	return testCA{root: root, leaf: leaf, key: leafKey}
}

func (ca testCA) pem() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.root.Raw})
}

// notationSign signs the chart tagged 1.0.0 with notation-go's own signer and pushes the signature
// as a referrer of the chart.
func notationSign(t *testing.T, s *memory.Store, ca testCA) {
	t.Helper()
	sg, err := signer.NewGenericSigner(ca.key, []*x509.Certificate{ca.leaf, ca.root})
	if err != nil {
		t.Fatal(err)
	}
	opts := notation.SignOptions{SignerSignOptions: notation.SignerSignOptions{SignatureMediaType: MediaTypeNotationJWS}, ArtifactReference: "1.0.0"}
	if _, err := notation.Sign(context.Background(), sg, notationregistry.NewRepository(s), opts); err != nil {
		t.Fatal(err)
	}
}

// pluginSign signs the chart with an envelope that asks for a verification plugin, as a signature
// made through a plugin signer does, and pushes it as a referrer.
func pluginSign(t *testing.T, s *memory.Store, m ocispec.Descriptor, ca testCA) {
	t.Helper()
	payload, _ := json.Marshal(map[string]any{"targetArtifact": ocispec.Descriptor{MediaType: m.MediaType, Digest: m.Digest, Size: m.Size}})
	ls, err := signature.NewLocalSigner([]*x509.Certificate{ca.leaf, ca.root}, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := signature.NewEnvelope(MediaTypeNotationJWS)
	sig, err := env.Sign(&signature.SignRequest{Payload: signature.Payload{ContentType: "application/vnd.cncf.notary.payload.v1+json", Content: payload},
		Signer: ls, SigningTime: time.Now(), SigningScheme: signature.SigningSchemeX509,
		ExtendedSignedAttributes: []signature.Attribute{{Key: "io.cncf.notary.verificationPlugin", Critical: true, Value: "com.example.verifier"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := notationregistry.NewRepository(s).PushSignature(context.Background(), MediaTypeNotationJWS, sig, m, nil); err != nil {
		t.Fatal(err)
	}
}

func trustPolicy(scope, level, identity string) []byte {
	return []byte(fmt.Sprintf(`{"version":"1.0","trustPolicies":[{"name":"charts","registryScopes":[%q],
		"signatureVerification":{"level":%q},"trustStores":["ca:berth"],"trustedIdentities":[%q]}]}`, scope, level, identity))
}

const trustedIdentity = "x509.subject: C=US, ST=WA, L=Seattle, O=Berth, CN=berth test signer"

func TestNotation(t *testing.T) {
	ca, other := newTestCA(t, "berth"), newTestCA(t, "other")
	good := trustPolicy("registry.test/charts/demo", "strict", trustedIdentity)
	store := func(ca testCA) []NotationCertificate {
		return []NotationCertificate{{Type: "ca", Store: "berth", Name: "root.crt", Data: ca.pem()}}
	}
	tests := []struct {
		name   string
		sign   []testCA
		plugin bool
		other  bool // another referrer, whose artifact type the store does not say
		policy []byte
		certs  []NotationCertificate
		limits Limits
		reason Reason
		detail string
	}{
		{name: "signed and trusted", sign: []testCA{ca}, policy: good, certs: store(ca)},
		{name: "a wildcard scope", sign: []testCA{ca}, policy: trustPolicy("*", "permissive", "*"), certs: store(ca)},
		{name: "trust store in DER", sign: []testCA{ca}, policy: good, certs: []NotationCertificate{{Type: "ca", Store: "berth", Name: "root.der", Data: ca.root.Raw}}},
		{name: "an untrusted signature beside a trusted one", sign: []testCA{other, ca}, policy: good, certs: store(ca)},
		{name: "beside a referrer of another kind", sign: []testCA{ca}, other: true, policy: good, certs: store(ca)},
		{name: "only a referrer of another kind", other: true, policy: good, certs: store(ca), reason: ReasonNoSignature},
		{name: "no signature", policy: good, certs: store(ca), reason: ReasonNoSignature},
		{name: "signed by another CA", sign: []testCA{other}, policy: good, certs: store(ca), reason: ReasonUntrusted, detail: `trust stores ["ca:berth"]`},
		{name: "identity not trusted", sign: []testCA{ca}, certs: store(ca), reason: ReasonWrongIdentity, detail: `signed by "CN=berth test signer,O=Berth,L=Seattle,ST=WA,C=US"`,
			policy: trustPolicy("registry.test/charts/demo", "strict", "x509.subject: C=US, ST=WA, O=Berth, CN=someone else")},
		{name: "policy without a statement for the repository", sign: []testCA{ca}, certs: store(ca), reason: ReasonInvalidOptions, detail: "covering registry.test/charts/demo",
			policy: trustPolicy("registry.test/charts/other", "strict", trustedIdentity)},
		{name: "policy not parsing", sign: []testCA{ca}, certs: store(ca), policy: []byte(`{"version":`), reason: ReasonInvalidOptions, detail: "parse trust policy"},
		{name: "policy of an unknown version", sign: []testCA{ca}, certs: store(ca), policy: []byte(`{"version":"9","trustPolicies":[]}`), reason: ReasonInvalidOptions},
		{name: "audit level", sign: []testCA{ca}, certs: store(ca), reason: ReasonInvalidOptions, detail: `does not enforce authenticity (verification level "audit")`,
			policy: trustPolicy("registry.test/charts/demo", "audit", trustedIdentity)},
		{name: "skip level", sign: []testCA{ca}, certs: store(ca), reason: ReasonInvalidOptions, detail: `does not enforce integrity`,
			policy: []byte(`{"version":"1.0","trustPolicies":[{"name":"charts","registryScopes":["*"],"signatureVerification":{"level":"skip"}}]}`)},
		{name: "policy naming a store the options lack", sign: []testCA{ca}, policy: good, reason: ReasonInvalidOptions, detail: "ca:berth",
			certs: []NotationCertificate{{Type: "ca", Store: "elsewhere", Name: "root.crt", Data: ca.pem()}}},
		{name: "certificate not parsing", sign: []testCA{ca}, policy: good, reason: ReasonInvalidOptions, detail: "truststore/x509/ca/berth/bad.crt",
			certs: []NotationCertificate{{Type: "ca", Store: "berth", Name: "bad.crt", Data: []byte("not a certificate")}}},
		{name: "unknown store type", sign: []testCA{ca}, policy: good, reason: ReasonInvalidOptions,
			certs: []NotationCertificate{{Type: "plugin", Store: "berth", Name: "root.crt", Data: ca.pem()}}},
		{name: "envelope larger than the limit", sign: []testCA{ca}, policy: good, certs: store(ca), limits: Limits{MaxBundleBytes: 64}, reason: ReasonBoundsExceeded, detail: "signature envelope"},
		{name: "policy larger than the limit", sign: []testCA{ca}, policy: good, certs: store(ca), limits: Limits{MaxMaterialBytes: 64}, reason: ReasonBoundsExceeded, detail: "trust policy"},
		{name: "signature that needs a verification plugin", plugin: true, policy: good, certs: store(ca), reason: ReasonUntrusted, detail: `verification plugin "com.example.verifier"`},
		{name: "more signatures than the limit", sign: []testCA{other, other, ca}, policy: good, certs: store(ca), limits: Limits{MaxSignatures: 2}, reason: ReasonBoundsExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, m := chart(t)
			for _, c := range tt.sign {
				notationSign(t, s, c)
			}
			if tt.other {
				empty := push(t, s, ocispec.MediaTypeEmptyJSON, []byte("{}"))
				layer := push(t, s, "application/vnd.example.sbom", []byte("an SBOM"))
				pushManifest(t, s, ocispec.Manifest{Config: empty, Layers: []ocispec.Descriptor{layer}, Subject: &m})
			}
			if tt.plugin {
				pluginSign(t, s, m, ca)
			}
			proof, err := Verify(context.Background(), VerifyOptions{Repository: s, Reference: ref, Digest: m.Digest,
				Notation: &NotationOptions{TrustPolicy: tt.policy, Certificates: tt.certs}, Limits: tt.limits})
			if tt.reason != "" {
				var e *Error
				if !errors.As(err, &e) || e.Reason != tt.reason || e.Provider != ProviderNotation {
					t.Fatalf("got %v, want reason %s", err, tt.reason)
				}
				if e.Reference != ref || e.Digest != string(m.Digest) || !strings.Contains(err.Error(), tt.detail) {
					t.Fatalf("error does not name the chart or %q: %v", tt.detail, err)
				}
				if strings.Contains(err.Error(), "BEGIN CERTIFICATE") || strings.Contains(err.Error(), "trustPolicies") {
					t.Fatalf("error quotes material: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Proof{Reference: ref, Digest: m.Digest, Provider: ProviderNotation, Signer: "CN=berth test signer,O=Berth,L=Seattle,ST=WA,C=US", Format: "notation"}
			if *proof != want {
				t.Fatalf("proof %+v, want %+v", proof, want)
			}
		})
	}
}

func TestVerifyOneProvider(t *testing.T) {
	s, m := chart(t)
	for name, opts := range map[string]VerifyOptions{
		"none": {},
		"both": {Cosign: &CosignOptions{}, Notation: &NotationOptions{}},
	} {
		opts.Repository, opts.Reference, opts.Digest = s, ref, m.Digest
		_, err := Verify(context.Background(), opts)
		if !errors.Is(err, &Error{Reason: ReasonInvalidOptions}) {
			t.Fatalf("%s: got %v", name, err)
		}
	}
}

func TestLoadNotationDir(t *testing.T) {
	ca := newTestCA(t, "berth")
	write := func(t *testing.T, dir, name string, data []byte) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	good := trustPolicy("registry.test/charts/demo", "strict", trustedIdentity)
	tests := []struct {
		name   string
		setup  func(t *testing.T, dir string)
		limits Limits
		reason Reason
	}{
		{name: "trustpolicy.oci.json and a PEM store", setup: func(t *testing.T, dir string) {
			write(t, dir, "trustpolicy.oci.json", good)
			write(t, dir, "truststore/x509/ca/berth/root.pem", ca.pem())
		}},
		{name: "the older trustpolicy.json and a DER store", setup: func(t *testing.T, dir string) {
			write(t, dir, "trustpolicy.json", good)
			write(t, dir, "truststore/x509/ca/berth/root.crt", ca.root.Raw)
		}},
		{name: "no trust policy", reason: ReasonInvalidOptions, setup: func(t *testing.T, dir string) {}},
		{name: "a symbolic link in the store", reason: ReasonInvalidOptions, setup: func(t *testing.T, dir string) {
			write(t, dir, "trustpolicy.oci.json", good)
			write(t, dir, "elsewhere/root.pem", ca.pem())
			os.MkdirAll(filepath.Join(dir, "truststore/x509/ca/berth"), 0o755)
			if err := os.Symlink(filepath.Join(dir, "elsewhere/root.pem"), filepath.Join(dir, "truststore/x509/ca/berth/root.pem")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a certificate file over the limit", reason: ReasonBoundsExceeded, limits: Limits{MaxMaterialBytes: 600}, setup: func(t *testing.T, dir string) {
			write(t, dir, "trustpolicy.oci.json", good)
			write(t, dir, "truststore/x509/ca/berth/root.pem", append(ca.pem(), ca.pem()...))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			o, err := LoadNotationDir(dir, tt.limits)
			if tt.reason != "" {
				var ce *ConfigError
				if !errors.As(err, &ce) || ce.Reason != tt.reason || !strings.HasPrefix(ce.Path, dir) {
					t.Fatalf("got %v, want reason %s", err, tt.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s, m := chart(t)
			notationSign(t, s, ca)
			if _, err := Verify(context.Background(), VerifyOptions{Repository: s, Reference: ref, Digest: m.Digest, Notation: o}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestDefaultNotationDir(t *testing.T) {
	t.Setenv("NOTATION_CONFIG", "/etc/notation-here")
	if d, err := DefaultNotationDir(); err != nil || d != "/etc/notation-here" {
		t.Fatalf("got %q, %v", d, err)
	}
	t.Setenv("NOTATION_CONFIG", "")
	t.Setenv("XDG_CONFIG_HOME", "/home/someone/.config")
	if d, err := DefaultNotationDir(); err != nil || d != "/home/someone/.config/notation" {
		t.Fatalf("got %q, %v", d, err)
	}
}
