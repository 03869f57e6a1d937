package provenance

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// cosign tries the Sigstore bundles among the referrers, then the tag schema's simple signatures.
func (v *verification) cosign(ctx context.Context) (*Proof, error) {
	o := v.opts.Cosign
	for _, m := range [][]byte{o.PublicKey, o.TrustedRoot} {
		if int64(len(m)) > v.lim.MaxMaterialBytes {
			return nil, v.bounds("the verification material", v.lim.MaxMaterialBytes)
		}
	}
	var best *Error
	keep := func(e *Error) {
		if best == nil || rank(e.Reason) > rank(best.Reason) {
			best = e
		}
	}
	refs, err := v.referrers(ctx, MediaTypeSigstoreBundle)
	if err != nil {
		return nil, err
	}
	for _, ref := range refs {
		proof, err := v.cosignBundle(ctx, ref)
		if err == nil {
			return proof, nil
		}
		if e := (*Error)(nil); errors.As(err, &e) {
			if e.Reason == ReasonBoundsExceeded || e.Reason == ReasonRegistry || e.Reason == ReasonInvalidOptions {
				return nil, e
			}
			keep(e)
		}
	}
	if !o.keyless() {
		proof, err := v.cosignTagged(ctx)
		if err == nil {
			return proof, nil
		}
		if e := (*Error)(nil); errors.As(err, &e) && e.Reason != ReasonNoSignature {
			return nil, e
		}
	}
	if best == nil {
		best = v.fail(ReasonNoSignature, "neither a Sigstore bundle among the referrers nor a "+sigTag(v.opts.Digest)+" tag", nil)
	}
	return nil, best
}

// rank orders failure reasons from the least to the most telling.
func rank(r Reason) int {
	switch r {
	case ReasonNoSignature:
		return 0
	case ReasonUntrusted, ReasonNotInLog:
		return 1
	default:
		return 2
	}
}

func (v *verification) cosignBundle(ctx context.Context, ref ocispecDescriptor) (*Proof, error) {
	m, err := v.manifest(ctx, ref)
	if err != nil {
		return nil, err
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != MediaTypeSigstoreBundle {
		return nil, v.fail(ReasonNoSignature, "referrer "+string(ref.Digest)+" does not hold one Sigstore bundle", nil)
	}
	data, err := v.fetch(ctx, m.Layers[0], "bundle", v.lim.MaxBundleBytes)
	if err != nil {
		return nil, err
	}
	b, err := ParseBundle(data)
	if err != nil {
		return nil, v.fail(ReasonNoSignature, "referrer "+string(ref.Digest), err)
	}
	proof, err := v.verifyEntity(b)
	if err != nil {
		return nil, err
	}
	proof.Format = "bundle"
	return proof, nil
}

// ParseBundle parses a Sigstore bundle (JSON).
func ParseBundle(data []byte) (*bundle.Bundle, error) {
	var b bundle.Bundle
	if err := b.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("parse Sigstore bundle: %w", err)
	}
	return &b, nil
}

// verifyEntity verifies a signed entity (a bundle) for the chart's digest, with the key or keyless.
func (v *verification) verifyEntity(e verify.SignedEntity) (*Proof, error) {
	o := v.opts.Cosign
	want, _ := hex.DecodeString(v.opts.Digest.Encoded())
	if !o.keyless() {
		pub, fp, err := v.publicKey()
		if err != nil {
			return nil, err
		}
		tm := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
			return root.NewExpiringKey(pub, time.Time{}, time.Time{}), nil
		})
		ver, err := verify.NewVerifier(tm, verify.WithNoObserverTimestamps())
		if err != nil {
			return nil, v.fail(ReasonInvalidOptions, "verifier", err)
		}
		if _, err := ver.Verify(e, verify.NewPolicy(verify.WithArtifactDigest("sha256", want), verify.WithKey())); err != nil {
			return nil, v.fail(ReasonUntrusted, "the signature does not verify with the public key "+fp, err)
		}
		return &Proof{Reference: v.opts.Reference, Digest: v.opts.Digest, Provider: ProviderCosign, Signer: fp}, nil
	}
	tr, err := ParseTrustedRoot(o.TrustedRoot)
	if err != nil {
		return nil, v.fail(ReasonInvalidOptions, "trusted root", err)
	}
	return v.verifyKeyless(e, tr, want)
}

// verifyKeyless checks a keyless signature against trusted material, then its signer.
func (v *verification) verifyKeyless(e verify.SignedEntity, tm root.TrustedMaterial, want []byte) (*Proof, error) {
	o := v.opts.Cosign
	idRe, err := anchored(o.CertificateIdentityRegexp)
	if err != nil {
		return nil, v.fail(ReasonInvalidOptions, "certificate identity regexp", err)
	}
	issRe, err := anchored(o.CertificateOIDCIssuerRegexp)
	if err != nil {
		return nil, v.fail(ReasonInvalidOptions, "certificate OIDC issuer regexp", err)
	}
	if (o.CertificateIdentity == "" && idRe == nil) || (o.CertificateOIDCIssuer == "" && issRe == nil) {
		return nil, v.fail(ReasonInvalidOptions, "keyless verification needs a certificate identity and an OIDC issuer", nil)
	}
	entries, err := e.TlogEntries()
	if err != nil || len(entries) == 0 {
		return nil, v.fail(ReasonNotInLog, "the signature has no transparency log entry", err)
	}
	ver, err := verify.NewVerifier(tm, verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1))
	if err != nil {
		return nil, v.fail(ReasonInvalidOptions, "verifier", err)
	}
	if _, err := ver.VerifyTransparencyLogInclusion(e); err != nil {
		return nil, v.fail(ReasonNotInLog, "the transparency log entry does not verify", err)
	}
	res, err := ver.Verify(e, verify.NewPolicy(verify.WithArtifactDigest("sha256", want), verify.WithoutIdentitiesUnsafe()))
	if err != nil {
		return nil, v.fail(ReasonUntrusted, "the signature or its certificate does not verify against the trusted root", err)
	}
	if res.Signature == nil || res.Signature.Certificate == nil {
		return nil, v.fail(ReasonUntrusted, "the signature has no certificate", nil)
	}
	san, iss := res.Signature.Certificate.SubjectAlternativeName, res.Signature.Certificate.Extensions.Issuer
	if !matches(o.CertificateOIDCIssuer, issRe, iss) {
		return nil, v.fail(ReasonWrongIssuer, fmt.Sprintf("issued by %q", iss), nil)
	}
	if !matches(o.CertificateIdentity, idRe, san) {
		return nil, v.fail(ReasonWrongIdentity, fmt.Sprintf("signed by %q", san), nil)
	}
	idx := entries[0].LogIndex()
	return &Proof{Reference: v.opts.Reference, Digest: v.opts.Digest, Provider: ProviderCosign, Signer: san, Issuer: iss, LogIndex: &idx}, nil
}

func anchored(expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	return regexp.Compile("^(?:" + expr + ")$")
}

func matches(exact string, re *regexp.Regexp, got string) bool {
	if exact != "" && exact != got {
		return false
	}
	return re == nil || re.MatchString(got)
}

// ParseTrustedRoot parses a Sigstore trusted_root.json.
func ParseTrustedRoot(data []byte) (*root.TrustedRoot, error) {
	if len(data) == 0 {
		return nil, errors.New("no trusted root given")
	}
	return root.NewTrustedRootFromJSON(data)
}

// ParsePublicKey parses a PEM public key and returns its verifier and fingerprint.
func ParsePublicKey(pemData []byte) (signature.Verifier, string, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemData)
	if err != nil {
		return nil, "", fmt.Errorf("parse public key: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, "", fmt.Errorf("parse public key: %w", err)
	}
	sum := sha256.Sum256(der)
	sv, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, "", fmt.Errorf("parse public key: %w", err)
	}
	return sv, "sha256:" + hex.EncodeToString(sum[:]), nil
}

func (v *verification) publicKey() (signature.Verifier, string, error) {
	sv, fp, err := ParsePublicKey(v.opts.Cosign.PublicKey)
	if err != nil {
		return nil, "", v.fail(ReasonInvalidOptions, "", err)
	}
	return sv, fp, nil
}

// simpleSigning is cosign's signed payload in the tag schema.
type simpleSigning struct {
	Critical struct {
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
}

// ParseSimpleSigning parses a simple-signing payload and returns the digest it signs.
func ParseSimpleSigning(data []byte) (string, error) {
	var p simpleSigning
	if err := json.Unmarshal(data, &p); err != nil {
		return "", fmt.Errorf("parse simple-signing payload: %w", err)
	}
	return p.Critical.Image.DockerManifestDigest, nil
}

// cosignTagged verifies the simple signatures of the sha256-<hex>.sig tag with the public key.
func (v *verification) cosignTagged(ctx context.Context) (*Proof, error) {
	desc, err := v.tagged(ctx)
	if err != nil {
		return nil, err
	}
	if desc == nil {
		return nil, v.fail(ReasonNoSignature, "no "+sigTag(v.opts.Digest)+" tag", nil)
	}
	m, err := v.manifest(ctx, *desc)
	if err != nil {
		return nil, err
	}
	if len(m.Layers) > v.lim.MaxSignatures {
		return nil, v.bounds("the signatures of "+sigTag(v.opts.Digest), int64(v.lim.MaxSignatures))
	}
	pub, fp, err := v.publicKey()
	if err != nil {
		return nil, err
	}
	var last *Error = v.fail(ReasonNoSignature, sigTag(v.opts.Digest)+" holds no simple signature", nil)
	for _, l := range m.Layers {
		sig, ok := l.Annotations[AnnotationCosignSig]
		if l.MediaType != MediaTypeSimpleSigning || !ok {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(sig)
		if err != nil {
			continue
		}
		payload, err := v.fetch(ctx, l, "simple-signing payload", v.lim.MaxBundleBytes)
		if err != nil {
			return nil, err
		}
		if err := pub.VerifySignature(bytesReader(raw), bytesReader(payload)); err != nil {
			last = v.fail(ReasonUntrusted, "the signature does not verify with the public key "+fp, err)
			continue
		}
		signed, err := ParseSimpleSigning(payload)
		if err != nil || signed != string(v.opts.Digest) {
			last = v.fail(ReasonUntrusted, fmt.Sprintf("the signature signs %q, not the chart", signed), err)
			continue
		}
		return &Proof{Reference: v.opts.Reference, Digest: v.opts.Digest, Provider: ProviderCosign, Signer: fp, Format: "simplesigning"}, nil
	}
	return nil, last
}
