// Package provenance verifies that a chart stored in an OCI registry is signed, with cosign (a public
// key, or keyless: a certificate identity and OIDC issuer checked against a transparency log) or with
// the Notary Project's notation (a trust policy and trust store, as `notation verify` reads them), and
// returns the proof of it. It is a library: it reads the registry through oras-go, reads everything
// the tenant or the registry supplies with a size limit, and returns a Proof or a typed *Error.
//
// Signatures are found through the OCI 1.1 referrers API (Sigstore bundles, artifact type
// application/vnd.dev.sigstore.bundle.v0.3+json) and, when none verifies, through cosign's tag
// schema (the manifest tagged sha256-<hex>.sig, simple-signing layers). Notary Project signatures are
// found through the referrers API (artifact type application/vnd.cncf.notary.signature), which oras
// falls back to the referrers tag schema for on a registry without it.
package provenance

import (
	"context"
	"fmt"
	"time"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/content"
)

// Provider names what made a signature.
type Provider string

const (
	ProviderCosign   Provider = "cosign"
	ProviderNotation Provider = "notation"
)

// Repository is what Verify reads the registry through: a *remote.Repository (with the caller's
// own HTTP client and credentials) or any oras content store holding the chart and its signatures.
// When it also implements registry.ReferrerLister, referrers are listed through it.
type Repository interface {
	content.ReadOnlyGraphStorage
	content.Resolver
}

// Limits bound what Verify reads and how long it may take. Zero fields take DefaultLimits' values.
type Limits struct {
	// Timeout bounds the whole verification, registry calls included.
	Timeout time.Duration
	// MaxManifestBytes bounds each manifest read (signature manifests, referrers).
	MaxManifestBytes int64
	// MaxBundleBytes bounds each signature blob: a Sigstore bundle, a simple-signing payload or a
	// Notary Project signature envelope.
	MaxBundleBytes int64
	// MaxMaterialBytes bounds each piece of the caller's material: a key, a trusted root, a trust
	// policy, each trust store certificate file.
	MaxMaterialBytes int64
	// MaxSignatures bounds how many candidate signatures are listed and tried (notation's
	// MaxSignatureAttempts).
	MaxSignatures int
}

// DefaultLimits are the limits used for every zero field of Limits.
func DefaultLimits() Limits {
	return Limits{
		Timeout:          time.Minute,
		MaxManifestBytes: 4 << 20,
		MaxBundleBytes:   1 << 20,
		MaxMaterialBytes: 1 << 20,
		MaxSignatures:    32,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.Timeout <= 0 {
		l.Timeout = d.Timeout
	}
	if l.MaxManifestBytes <= 0 {
		l.MaxManifestBytes = d.MaxManifestBytes
	}
	if l.MaxBundleBytes <= 0 {
		l.MaxBundleBytes = d.MaxBundleBytes
	}
	if l.MaxMaterialBytes <= 0 {
		l.MaxMaterialBytes = d.MaxMaterialBytes
	}
	if l.MaxSignatures <= 0 {
		l.MaxSignatures = d.MaxSignatures
	}
	return l
}

// CosignOptions verifies cosign signatures, with a public key or keyless. Exactly one of PublicKey
// and the keyless fields is set.
type CosignOptions struct {
	// PublicKey is a PEM-encoded public key (the contents of cosign.pub).
	PublicKey []byte

	// Keyless: the signer's certificate identity (its subject alternative name) and the OIDC issuer
	// that vouched for it, each exact or as a regular expression (anchored, as cosign does). One of
	// each pair is required.
	CertificateIdentity         string
	CertificateIdentityRegexp   string
	CertificateOIDCIssuer       string
	CertificateOIDCIssuerRegexp string
	// TrustedRoot is a Sigstore trusted_root.json: the certificate authorities, transparency logs
	// and timestamp authorities keyless signatures are checked against. Required for keyless.
	TrustedRoot []byte
}

func (o *CosignOptions) keyless() bool { return len(o.PublicKey) == 0 }

// VerifyOptions says which chart to verify and how.
type VerifyOptions struct {
	// Repository holds the chart and its signatures.
	Repository Repository
	// Reference names the chart in errors and in the proof (registry/repository:tag).
	Reference string
	// Digest is the chart manifest's digest, resolved by the caller. When empty, Reference's tag is
	// resolved through Repository.
	Digest digest.Digest
	// Cosign selects the cosign provider.
	Cosign *CosignOptions
	// Notation selects the Notary Project provider. Exactly one of Cosign and Notation is set.
	Notation *NotationOptions
	Limits   Limits
}

// Proof is what a successful verification establishes.
type Proof struct {
	Reference string
	// Digest is the verified chart manifest's digest.
	Digest   digest.Digest
	Provider Provider
	// Signer identifies who signed: the certificate's subject alternative name for keyless, the
	// key's fingerprint ("sha256:<hex>" of its DER form) for a key, the certificate subject for
	// notation (RFC 2253 form).
	Signer string
	// Issuer is the OIDC issuer of a keyless signer; empty otherwise.
	Issuer string
	// LogIndex is the transparency log index of a keyless signature; nil otherwise.
	LogIndex *int64
	// Format is how the signature was found: "bundle" (referrers) or "simplesigning" (tag schema)
	// for cosign; "notation" for a Notary Project signature.
	Format string
}

// Verify finds the signatures of the chart named by opts and returns the proof of the first one
// that verifies. It fails with an *Error whose Reason says why, preferring the most telling reason
// over all signatures tried (an untrusted signature over no signature at all).
func Verify(ctx context.Context, opts VerifyOptions) (*Proof, error) {
	lim := opts.Limits.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	v := &verification{opts: opts, lim: lim}
	switch {
	case opts.Cosign != nil && opts.Notation != nil:
		return nil, v.fail(ReasonInvalidOptions, "both cosign and notation selected; select one provider", nil)
	case opts.Cosign != nil:
		v.provider = ProviderCosign
	case opts.Notation != nil:
		v.provider = ProviderNotation
	default:
		return nil, v.fail(ReasonInvalidOptions, "no provider selected", nil)
	}
	if opts.Repository == nil {
		return nil, v.fail(ReasonInvalidOptions, "no repository", nil)
	}
	if opts.Digest == "" {
		desc, err := opts.Repository.Resolve(ctx, opts.Reference)
		if err != nil {
			return nil, v.fail(ReasonRegistry, "resolve the reference", err)
		}
		v.opts.Digest = desc.Digest
	}
	if err := v.opts.Digest.Validate(); err != nil || v.opts.Digest.Algorithm() != digest.SHA256 {
		return nil, v.fail(ReasonInvalidOptions, fmt.Sprintf("digest %q is not a sha256 digest", v.opts.Digest), err)
	}
	if v.provider == ProviderNotation {
		return v.notation(ctx)
	}
	return v.cosign(ctx)
}

// verification is one call of Verify: its options, limits and provider.
type verification struct {
	opts     VerifyOptions
	lim      Limits
	provider Provider
}

func (v *verification) fail(r Reason, detail string, err error) *Error {
	return &Error{Reason: r, Provider: v.provider, Reference: v.opts.Reference, Digest: string(v.opts.Digest), Detail: detail, Err: err}
}

func (v *verification) bounds(what string, limit int64) *Error {
	return v.fail(ReasonBoundsExceeded, "", &BoundsError{What: what, Limit: limit})
}
