package provenance

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"
	"oras.land/oras-go/v2/content/memory"
)

const ref = "registry.test/charts/demo:1.0.0"

// push stores a blob and returns its descriptor.
func push(t *testing.T, s *memory.Store, mediaType string, data []byte) ocispec.Descriptor {
	t.Helper()
	d := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
	if err := s.Push(context.Background(), d, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	return d
}

func pushManifest(t *testing.T, s *memory.Store, m ocispec.Manifest) ocispec.Descriptor {
	t.Helper()
	m.SchemaVersion = 2
	m.MediaType = ocispec.MediaTypeImageManifest
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	d := push(t, s, ocispec.MediaTypeImageManifest, data)
	d.ArtifactType = m.ArtifactType
	return d
}

// chart pushes a small chart the way Helm lays it out.
func chart(t *testing.T) (*memory.Store, ocispec.Descriptor) {
	s := memory.New()
	cfg := push(t, s, "application/vnd.cncf.helm.config.v1+json", []byte(`{"name":"demo","version":"1.0.0","apiVersion":"v2"}`))
	layer := push(t, s, "application/vnd.cncf.helm.chart.content.v1.tar+gzip", []byte("not really a tarball"))
	m := pushManifest(t, s, ocispec.Manifest{Config: cfg, Layers: []ocispec.Descriptor{layer}})
	if err := s.Tag(context.Background(), m, "1.0.0"); err != nil {
		t.Fatal(err)
	}
	return s, m
}

// bundleReferrer signs the chart's digest with the keypair as cosign does (a DSSE in-toto statement)
// and pushes the bundle as a referrer of the chart.
func bundleReferrer(t *testing.T, s *memory.Store, subject ocispec.Descriptor, kp sign.Keypair, signed digest.Digest) {
	t.Helper()
	stmt := fmt.Sprintf(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"charts/demo","digest":{"sha256":%q}}],"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{}}`, signed.Encoded())
	pb, err := sign.Bundle(&sign.DSSEData{Data: []byte(stmt), PayloadType: "application/vnd.in-toto+json"}, kp, sign.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	layer := push(t, s, MediaTypeSigstoreBundle, data)
	empty := push(t, s, ocispec.MediaTypeEmptyJSON, []byte("{}"))
	pushManifest(t, s, ocispec.Manifest{ArtifactType: MediaTypeSigstoreBundle, Config: empty, Layers: []ocispec.Descriptor{layer}, Subject: &subject})
}

// tagSignature signs the chart in cosign's tag schema with the ECDSA key.
func tagSignature(t *testing.T, s *memory.Store, key *ecdsa.PrivateKey, signed digest.Digest) {
	t.Helper()
	payload := []byte(fmt.Sprintf(`{"critical":{"identity":{"docker-reference":"registry.test/charts/demo"},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`, signed))
	sum := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, key, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	layer := push(t, s, MediaTypeSimpleSigning, payload)
	layer.Annotations = map[string]string{AnnotationCosignSig: base64.StdEncoding.EncodeToString(sig)}
	cfg := push(t, s, "application/vnd.oci.image.config.v1+json", []byte(`{}`))
	m := pushManifest(t, s, ocispec.Manifest{Config: cfg, Layers: []ocispec.Descriptor{layer}})
	if err := s.Tag(context.Background(), m, sigTag(signed)); err != nil {
		t.Fatal(err)
	}
}

func pemOf(t *testing.T, pub any) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func TestCosignKey(t *testing.T) {
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	kpPEM, _ := kp.GetPublicKeyPem()
	otherPEM, _ := other.GetPublicKeyPem()

	tests := []struct {
		name   string
		setup  func(t *testing.T, s *memory.Store, m ocispec.Descriptor)
		key    []byte
		limits Limits
		format string
		reason Reason
	}{
		{name: "bundle among the referrers", key: []byte(kpPEM), format: "bundle",
			setup: func(t *testing.T, s *memory.Store, m ocispec.Descriptor) { bundleReferrer(t, s, m, kp, m.Digest) }},
		{name: "simple signature under the tag", key: pemOf(t, &ecKey.PublicKey), format: "simplesigning",
			setup: func(t *testing.T, s *memory.Store, m ocispec.Descriptor) { tagSignature(t, s, ecKey, m.Digest) }},
		{name: "no signature", key: []byte(kpPEM), reason: ReasonNoSignature,
			setup: func(*testing.T, *memory.Store, ocispec.Descriptor) {}},
		{name: "bundle made by another key", key: []byte(kpPEM), reason: ReasonUntrusted,
			setup: func(t *testing.T, s *memory.Store, m ocispec.Descriptor) { bundleReferrer(t, s, m, other, m.Digest) }},
		{name: "bundle that signs another digest", key: []byte(kpPEM), reason: ReasonUntrusted,
			setup: func(t *testing.T, s *memory.Store, m ocispec.Descriptor) {
				bundleReferrer(t, s, m, kp, digest.FromString("another chart"))
			}},
		{name: "tag signature by another key", key: []byte(otherPEM), reason: ReasonUntrusted,
			setup: func(t *testing.T, s *memory.Store, m ocispec.Descriptor) { tagSignature(t, s, ecKey, m.Digest) }},
		{name: "bundle larger than the limit", key: []byte(kpPEM), reason: ReasonBoundsExceeded, limits: Limits{MaxBundleBytes: 64},
			setup: func(t *testing.T, s *memory.Store, m ocispec.Descriptor) { bundleReferrer(t, s, m, kp, m.Digest) }},
		{name: "unparsable key", key: []byte("not a key"), reason: ReasonInvalidOptions,
			setup: func(t *testing.T, s *memory.Store, m ocispec.Descriptor) { bundleReferrer(t, s, m, kp, m.Digest) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, m := chart(t)
			tt.setup(t, s, m)
			proof, err := Verify(context.Background(), VerifyOptions{Repository: s, Reference: ref, Digest: m.Digest,
				Cosign: &CosignOptions{PublicKey: tt.key}, Limits: tt.limits})
			if tt.reason != "" {
				var e *Error
				if !errors.As(err, &e) || e.Reason != tt.reason {
					t.Fatalf("got %v, want reason %s", err, tt.reason)
				}
				if e.Reference != ref || e.Digest != string(m.Digest) {
					t.Fatalf("error does not name the chart: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, fp, _ := ParsePublicKey(tt.key)
			if proof.Digest != m.Digest || proof.Signer != fp || proof.Provider != ProviderCosign || proof.Format != tt.format {
				t.Fatalf("proof %+v", proof)
			}
		})
	}
}
