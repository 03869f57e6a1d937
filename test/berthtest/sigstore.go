package berthtest

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"

	"github.com/berthdev/berth/internal/provenance"
)

// Sigstore is a Sigstore of a test's own (sigstore-go's virtual Sigstore): a certificate
// authority that issues short-lived certificates for an OIDC identity, a transparency log and
// a timestamp authority. It signs charts keyless, as `cosign sign` does with an identity token,
// and gives the trusted root that verifies them.
type Sigstore struct {
	vs *ca.VirtualSigstore
}

// NewSigstore starts a new virtual Sigstore.
func NewSigstore(t testing.TB) *Sigstore {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	return &Sigstore{vs: vs}
}

// WriteTrustedRoot writes the Sigstore's trusted_root.json into dir and returns its path.
func (s *Sigstore) WriteTrustedRoot(t testing.TB, dir string) string {
	t.Helper()
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, s.vs.FulcioCertificateAuthorities(), logIDs(t, s.vs.CTLogs()), s.vs.TimestampingAuthorities(), logIDs(t, s.vs.RekorLogs()))
	if err != nil {
		t.Fatal(err)
	}
	data, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "trusted_root.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// logIDs are logs as a trusted root names them: the virtual Sigstore's logs carry their ID as
// hex text, which a trusted_root.json would carry as that text's bytes; a log's ID is the bytes
// the hex text (its key) names.
func logIDs(t testing.TB, logs map[string]*root.TransparencyLog) map[string]*root.TransparencyLog {
	t.Helper()
	fixed := make(map[string]*root.TransparencyLog, len(logs))
	for id, l := range logs {
		raw, err := hex.DecodeString(id)
		if err != nil {
			t.Fatal(err)
		}
		c := *l
		c.ID = raw
		fixed[id] = &c
	}
	return fixed
}

// SignBundle signs the manifest dgst of repo on r keyless, as identity vouched for by the OIDC
// issuer: a certificate for the identity, a DSSE in-toto statement naming the digest, its entry
// in the transparency log with an inclusion proof, and a signed timestamp, as a Sigstore bundle
// pushed as a referrer of the manifest. It returns the entry's log index.
func (s *Sigstore) SignBundle(t testing.TB, r *OCIRegistry, repo, dgst, identity, issuer string) int64 {
	t.Helper()
	stmt := fmt.Sprintf(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":%q,"digest":{"sha256":%q}}],"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{}}`,
		r.Host+"/"+repo, strings.TrimPrefix(dgst, "sha256:"))
	// The virtual Sigstore's certificates are valid from five minutes from now on.
	e, err := s.vs.AttestAtTime(identity, issuer, []byte(stmt), time.Now().Add(5*time.Minute), true)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := e.VerificationContent()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := e.SignatureContent()
	if err != nil {
		t.Fatal(err)
	}
	env := sc.(*bundle.Envelope).Envelope
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := e.TlogEntries()
	tsrs, _ := e.Timestamps()
	pb := &protobundle.Bundle{
		MediaType: provenance.MediaTypeSigstoreBundle,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_Certificate{
				Certificate: &protocommon.X509Certificate{RawBytes: vc.(*bundle.Certificate).Certificate().Raw},
			},
			TimestampVerificationData: &protobundle.TimestampVerificationData{},
		},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload: payload, PayloadType: env.PayloadType,
			Signatures: []*protodsse.Signature{{Sig: sig, Keyid: env.Signatures[0].KeyID}},
		}},
	}
	for _, entry := range entries {
		// The virtual log's entries are of DSSE envelopes (Rekor's dsse v0.0.1); their inclusion
		// proof stands in for a promise.
		tle := proto.Clone(entry.TransparencyLogEntry()).(*protorekor.TransparencyLogEntry)
		tle.KindVersion = &protorekor.KindVersion{Kind: "dsse", Version: "0.0.1"}
		pb.VerificationMaterial.TlogEntries = append(pb.VerificationMaterial.TlogEntries, tle)
	}
	for _, tsr := range tsrs {
		pb.VerificationMaterial.TimestampVerificationData.Rfc3161Timestamps = append(pb.VerificationMaterial.TimestampVerificationData.Rfc3161Timestamps, &protocommon.RFC3161SignedTimestamp{SignedTimestamp: tsr})
	}
	data, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	r.pushReferrer(t, repo, dgst, provenance.MediaTypeSigstoreBundle, data)
	return entries[0].LogIndex()
}

// pushReferrer pushes to repo on r, as a referrer of the manifest dgst, an artifact of
// artifactType whose one layer (of the same media type) is data.
func (r *OCIRegistry) pushReferrer(t testing.TB, repo, dgst, artifactType string, data []byte) {
	t.Helper()
	ctx := t.Context()
	dst := r.repository(t, repo)
	subject, err := dst.Resolve(ctx, dgst)
	if err != nil {
		t.Fatalf("resolve %s@%s: %v", repo, dgst, err)
	}
	store := memory.New()
	layer := ocispec.Descriptor{MediaType: artifactType, Digest: digest.FromBytes(data), Size: int64(len(data))}
	if err := store.Push(ctx, layer, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	manifest, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, artifactType,
		oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}, Subject: &subject})
	if err != nil {
		t.Fatal(err)
	}
	if err := oras.CopyGraph(ctx, store, dst, manifest, oras.DefaultCopyGraphOptions); err != nil {
		t.Fatalf("push a referrer of %s@%s: %v", repo, dgst, err)
	}
}
