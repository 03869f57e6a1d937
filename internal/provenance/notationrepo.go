package provenance

import (
	"context"
	"errors"
	"fmt"

	"github.com/notaryproject/notation-core-go/signature"
	"github.com/notaryproject/notation-go"
	notationregistry "github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/verifier"
	"github.com/notaryproject/notation-go/verifier/trustpolicy"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry"
)

// Media types of Notary Project signature envelopes.
const (
	MediaTypeNotationJWS  = "application/jose+json"
	MediaTypeNotationCOSE = "application/cose"
)

// notationRepository is what notation.Verify reads the registry through: the chart's descriptor,
// its Notary Project referrers and their envelopes, each read with this verification's limits. The
// first *Error it meets is kept, for notation.Verify reports errors only as text.
type notationRepository struct {
	v      *verification
	failed *Error
}

func (r *notationRepository) keep(err error) error {
	if e := (*Error)(nil); errors.As(err, &e) && r.failed == nil {
		r.failed = e
	}
	return err
}

// Resolve returns the chart manifest's descriptor (its media type and size are part of what a
// notation signature signs).
func (r *notationRepository) Resolve(ctx context.Context, reference string) (ocispec.Descriptor, error) {
	v := r.v
	// The digest first; a store that resolves only tags is asked for the reference's tag, which must
	// still name the digest.
	candidates := []string{reference, v.opts.Reference}
	if ref, err := registry.ParseReference(v.opts.Reference); err == nil && ref.Reference != "" {
		candidates = append(candidates, ref.Reference)
	}
	for _, c := range candidates {
		if desc, err := v.opts.Repository.Resolve(ctx, c); err == nil && desc.Digest == v.opts.Digest {
			return desc, nil
		}
	}
	// Else read the manifest itself, bounded, to learn its size.
	data, err := v.fetch(ctx, ocispec.Descriptor{Digest: v.opts.Digest, MediaType: ocispec.MediaTypeImageManifest}, "manifest", v.lim.MaxManifestBytes)
	if err != nil {
		return ocispec.Descriptor{}, r.keep(err)
	}
	m, err := ParseManifest(data)
	if err != nil {
		return ocispec.Descriptor{}, r.keep(v.fail(ReasonRegistry, "the chart manifest", err))
	}
	mt := m.MediaType
	if mt == "" {
		mt = ocispec.MediaTypeImageManifest
	}
	return ocispec.Descriptor{MediaType: mt, Digest: digest.FromBytes(data), Size: int64(len(data))}, nil
}

// ListSignatures lists the Notary Project signatures referring to the chart, at most MaxSignatures.
func (r *notationRepository) ListSignatures(ctx context.Context, desc ocispec.Descriptor, fn func([]ocispec.Descriptor) error) error {
	refs, err := r.v.referrers(ctx, notationregistry.ArtifactTypeNotation)
	if err != nil {
		return r.keep(err)
	}
	var sigs []ocispec.Descriptor
	for _, d := range refs {
		if d.ArtifactType == "" && d.MediaType == ocispec.MediaTypeImageManifest {
			// A store that does not say a referrer's artifact type: its manifest says it.
			m, err := r.v.manifest(ctx, d)
			if err != nil {
				return r.keep(err)
			}
			if m.ArtifactType == notationregistry.ArtifactTypeNotation || m.Config.MediaType == notationregistry.ArtifactTypeNotation {
				d.ArtifactType = notationregistry.ArtifactTypeNotation
			}
		}
		if d.ArtifactType == notationregistry.ArtifactTypeNotation {
			sigs = append(sigs, d)
		}
	}
	if len(sigs) == 0 {
		return nil
	}
	return fn(sigs)
}

// FetchSignatureBlob reads a signature manifest and its one envelope, bounded. A referrer that holds
// no envelope ends the verification, as it ends `notation verify`.
func (r *notationRepository) FetchSignatureBlob(ctx context.Context, desc ocispec.Descriptor) ([]byte, ocispec.Descriptor, error) {
	v := r.v
	m, err := v.manifest(ctx, desc)
	if err != nil {
		return nil, ocispec.Descriptor{}, r.keep(err)
	}
	if len(m.Layers) != 1 || (m.Layers[0].MediaType != MediaTypeNotationJWS && m.Layers[0].MediaType != MediaTypeNotationCOSE) {
		return nil, ocispec.Descriptor{}, r.keep(v.fail(ReasonNoSignature, fmt.Sprintf("referrer %s does not hold one signature envelope", desc.Digest), nil))
	}
	data, err := v.fetch(ctx, m.Layers[0], "signature envelope", v.lim.MaxBundleBytes)
	if err != nil {
		return nil, ocispec.Descriptor{}, r.keep(err)
	}
	return data, m.Layers[0], nil
}

func (r *notationRepository) PushSignature(context.Context, string, []byte, ocispec.Descriptor, map[string]string) (ocispec.Descriptor, ocispec.Descriptor, error) {
	return ocispec.Descriptor{}, ocispec.Descriptor{}, errors.New("verification does not push")
}

// classify turns the outcomes of the signatures that failed into the most telling *Error.
func (v *verification) classify(outcomes []*notation.VerificationOutcome, p *trustpolicy.TrustPolicy) *Error {
	var best *Error
	for _, out := range outcomes {
		e := v.classifyOne(out, p)
		if best == nil || rank(e.Reason) > rank(best.Reason) {
			best = e
		}
	}
	return best
}

func (v *verification) classifyOne(out *notation.VerificationOutcome, p *trustpolicy.TrustPolicy) *Error {
	if out.EnvelopeContent != nil {
		if name, ok := pluginOf(out.EnvelopeContent.SignerInfo); ok {
			return v.fail(ReasonUntrusted, fmt.Sprintf("the signature needs the verification plugin %q, and plugins are not run", name), nil)
		}
	}
	for _, res := range out.VerificationResults {
		if res.Error == nil || res.Action != trustpolicy.ActionEnforce {
			continue
		}
		switch res.Type {
		case trustpolicy.TypeIntegrity:
			return v.fail(ReasonUntrusted, "the signature envelope does not verify", res.Error)
		case trustpolicy.TypeAuthenticity:
			return v.authenticity(res.Error, out, p)
		case trustpolicy.TypeExpiry:
			return v.fail(ReasonUntrusted, "the signature has expired", res.Error)
		case trustpolicy.TypeRevocation:
			return v.fail(ReasonUntrusted, "a certificate of the signature is revoked, or its revocation could not be checked", res.Error)
		default:
			return v.fail(ReasonUntrusted, fmt.Sprintf("%s verification failed", res.Type), res.Error)
		}
	}
	return v.fail(ReasonUntrusted, "the signature does not sign the chart's manifest", nil)
}

// authenticity tells a chain not anchored in the trust store from a signer the statement's trusted
// identities do not name. Neither message quotes the policy or a certificate beyond names.
func (v *verification) authenticity(err error, out *notation.VerificationOutcome, p *trustpolicy.TrustPolicy) *Error {
	var missing *missingStoreError
	if errors.As(err, &missing) {
		return v.fail(ReasonInvalidOptions, fmt.Sprintf("trust policy statement %q", p.Name), missing)
	}
	var ae *signature.SignatureAuthenticityError
	var inc notation.ErrorVerificationInconclusive
	if errors.As(err, &ae) || errors.As(err, &inc) || out.EnvelopeContent == nil || len(out.EnvelopeContent.SignerInfo.CertificateChain) == 0 {
		return v.fail(ReasonUntrusted, fmt.Sprintf("the signing certificate chain is not anchored in the trust stores %q of trust policy statement %q", p.TrustStores, p.Name), nil)
	}
	signer := out.EnvelopeContent.SignerInfo.CertificateChain[0].Subject.String()
	return v.fail(ReasonWrongIdentity, fmt.Sprintf("signed by %q, which the trusted identities of trust policy statement %q do not name", signer, p.Name), nil)
}

// pluginOf returns the verification plugin a signature asks for, if any.
func pluginOf(si signature.SignerInfo) (string, bool) {
	for _, a := range si.SignedAttributes.ExtendedAttributes {
		if a.Key == verifier.HeaderVerificationPlugin {
			name, _ := a.Value.(string)
			if len(name) > 64 {
				name = name[:64]
			}
			return name, true
		}
	}
	return "", false
}
