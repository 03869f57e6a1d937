package berthtest

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/berthdev/berth/internal/provenance"
)

// CosignKey is a cosign signing key a test made: an ECDSA P-256 key pair, the kind `cosign
// generate-key-pair` makes. It signs charts in a test's OCI registry the two ways cosign does.
type CosignKey struct {
	kp sign.Keypair
	// PublicPEM is the public key as cosign.pub holds it.
	PublicPEM []byte
}

// NewCosignKey makes a new cosign key pair.
func NewCosignKey(t testing.TB) CosignKey {
	t.Helper()
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := kp.GetPublicKeyPem()
	if err != nil {
		t.Fatal(err)
	}
	return CosignKey{kp: kp, PublicPEM: []byte(pub)}
}

// WritePublic writes the public key to dir/cosign.pub and returns the file's path.
func (k CosignKey) WritePublic(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "cosign.pub")
	if err := os.WriteFile(path, k.PublicPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// SignTagged signs the manifest dgst of repo on r in cosign's tag schema: a simple-signing
// payload naming the digest, its signature in the layer's annotation, under the tag
// sha256-<hex>.sig.
func (k CosignKey) SignTagged(t testing.TB, r *OCIRegistry, repo, dgst string) {
	t.Helper()
	d := digest.Digest(dgst)
	payload := fmt.Appendf(nil, `{"critical":{"identity":{"docker-reference":%q},"image":{"docker-manifest-digest":%q},"type":"cosign container image signature"},"optional":null}`, r.Host+"/"+repo, dgst)
	sig, _, err := k.kp.SignData(t.Context(), payload)
	if err != nil {
		t.Fatal(err)
	}
	r.Push(t, repo, d.Algorithm().String()+"-"+d.Encoded()+".sig", "",
		&Blob{MediaType: "application/vnd.oci.image.config.v1+json", Data: []byte("{}")},
		Blob{MediaType: provenance.MediaTypeSimpleSigning, Data: payload, Annotations: map[string]string{provenance.AnnotationCosignSig: base64.StdEncoding.EncodeToString(sig)}})
}

// SignBundle signs the manifest dgst of repo on r as cosign's bundle format does: a Sigstore
// bundle of a DSSE in-toto statement naming the digest, pushed as a referrer of the manifest.
func (k CosignKey) SignBundle(t testing.TB, r *OCIRegistry, repo, dgst string) {
	t.Helper()
	stmt := fmt.Sprintf(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":%q,"digest":{"sha256":%q}}],"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{}}`,
		r.Host+"/"+repo, strings.TrimPrefix(dgst, "sha256:"))
	pb, err := sign.Bundle(&sign.DSSEData{Data: []byte(stmt), PayloadType: "application/vnd.in-toto+json"}, k.kp, sign.BundleOptions{Context: t.Context()})
	if err != nil {
		t.Fatal(err)
	}
	data, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	r.pushReferrer(t, repo, dgst, provenance.MediaTypeSigstoreBundle, data)
}
