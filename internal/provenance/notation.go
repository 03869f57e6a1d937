package provenance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/notaryproject/notation-go"
	notationregistry "github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/verifier"
	"github.com/notaryproject/notation-go/verifier/trustpolicy"
	"oras.land/oras-go/v2/registry"
)

// NotationOptions verifies Notary Project signatures the way `notation verify` does, from what its
// configuration directory holds, in memory: the trust policy and the trust store. The trust policy
// statement whose registry scope covers the chart's registry/repository applies; it must enforce
// integrity and authenticity (the strict or permissive level). No plugin is run: a signature that
// asks for a verification plugin is refused. Revocation is checked as notation checks it, through
// the OCSP and CRL addresses of certificates that chain to the trust store, within Limits.Timeout.
type NotationOptions struct {
	// TrustPolicy is the OCI trust policy document: the JSON of trustpolicy.oci.json (or of the
	// trustpolicy.json of older notation, which has the same schema).
	TrustPolicy []byte
	// Certificates are the trust store, one entry per file of truststore/x509/<type>/<store>/.
	Certificates []NotationCertificate
}

// NotationCertificate is one file of notation's trust store: truststore/x509/<Type>/<Store>/<Name>.
type NotationCertificate struct {
	// Type is the store type: "ca", "signingAuthority" or "tsa".
	Type string
	// Store is the named store a trust policy refers to as "<Type>:<Store>".
	Store string
	// Name is the file's name; it names the certificate in errors.
	Name string
	// Data holds one or more certificates, PEM or DER.
	Data []byte
}

// ParseTrustPolicy parses and validates a notation OCI trust policy document.
func ParseTrustPolicy(data []byte) (*trustpolicy.Document, error) {
	var doc trustpolicy.Document
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse trust policy: %w", err)
	}
	if err := doc.Validate(); err != nil {
		return nil, fmt.Errorf("validate trust policy: %w", err)
	}
	return &doc, nil
}

// notation verifies the chart's Notary Project signatures with notation-go, through the bounded
// reads of this verification and the trust store held in the options.
func (v *verification) notation(ctx context.Context) (*Proof, error) {
	o := v.opts.Notation
	if int64(len(o.TrustPolicy)) > v.lim.MaxMaterialBytes {
		return nil, v.bounds("the trust policy", v.lim.MaxMaterialBytes)
	}
	store, err := newMemoryTrustStore(o.Certificates, v.lim)
	if err != nil {
		var be *BoundsError
		if errors.As(err, &be) {
			return nil, v.fail(ReasonBoundsExceeded, "", be)
		}
		return nil, v.fail(ReasonInvalidOptions, "trust store", err)
	}
	doc, err := ParseTrustPolicy(o.TrustPolicy)
	if err != nil {
		return nil, v.fail(ReasonInvalidOptions, "", err)
	}
	artifact, err := v.artifactReference()
	if err != nil {
		return nil, err
	}
	policy, err := doc.GetApplicableTrustPolicy(artifact)
	if err != nil {
		return nil, v.fail(ReasonInvalidOptions, fmt.Sprintf("no statement of the trust policy has a registry scope covering %s", repositoryOf(artifact)), nil)
	}
	if err := v.checkLevel(policy); err != nil {
		return nil, err
	}
	ver, err := verifier.NewWithOptions(doc, store, nil, verifier.VerifierOptions{})
	if err != nil {
		return nil, v.fail(ReasonInvalidOptions, "verifier", err)
	}
	rec := &recordingVerifier{Verifier: ver}
	repo := &notationRepository{v: v}
	_, _, err = notation.Verify(ctx, rec, repo, notation.VerifyOptions{ArtifactReference: artifact, MaxSignatureAttempts: v.lim.MaxSignatures})
	if repo.failed != nil {
		return nil, repo.failed
	}
	if err == nil && rec.verified != nil {
		return v.notationProof(rec.verified)
	}
	if len(rec.outcomes) == 0 {
		if ctx.Err() != nil {
			return nil, v.fail(ReasonRegistry, "", ctx.Err())
		}
		return nil, v.fail(ReasonNoSignature, "no Notary Project signature among the referrers", nil)
	}
	return nil, v.classify(rec.outcomes, policy)
}

// artifactReference is the reference notation matches trust policy scopes against:
// registry/repository@digest.
func (v *verification) artifactReference() (string, error) {
	ref, err := registry.ParseReference(v.opts.Reference)
	if err != nil {
		return "", v.fail(ReasonInvalidOptions, "the reference does not name a registry and repository", err)
	}
	return ref.Registry + "/" + ref.Repository + "@" + string(v.opts.Digest), nil
}

func repositoryOf(artifact string) string {
	ref, err := registry.ParseReference(artifact)
	if err != nil {
		return artifact
	}
	return ref.Registry + "/" + ref.Repository
}

// checkLevel refuses a statement whose verification level does not enforce integrity and
// authenticity (skip, audit, or an override that only logs them): a signature accepted under it would
// prove nothing.
func (v *verification) checkLevel(p *trustpolicy.TrustPolicy) error {
	level, err := p.SignatureVerification.GetVerificationLevel()
	if err != nil {
		return v.fail(ReasonInvalidOptions, fmt.Sprintf("trust policy statement %q", p.Name), err)
	}
	for _, t := range []trustpolicy.ValidationType{trustpolicy.TypeIntegrity, trustpolicy.TypeAuthenticity} {
		if level.Enforcement[t] != trustpolicy.ActionEnforce {
			return v.fail(ReasonInvalidOptions, fmt.Sprintf("trust policy statement %q does not enforce %s (verification level %q); use the strict or permissive level", p.Name, t, level.Name), nil)
		}
	}
	return nil
}

// recordingVerifier keeps the outcome of every signature notation tried, for the reason of a failure.
type recordingVerifier struct {
	notation.Verifier
	outcomes []*notation.VerificationOutcome
	verified *notation.VerificationOutcome
}

func (r *recordingVerifier) Verify(ctx context.Context, desc ocispecDescriptor, sig []byte, opts notation.VerifierVerifyOptions) (*notation.VerificationOutcome, error) {
	out, err := r.Verifier.Verify(ctx, desc, sig, opts)
	if out != nil {
		if err == nil {
			r.verified = out
		} else {
			r.outcomes = append(r.outcomes, out)
		}
	}
	return out, err
}

// notationProof names the signer: the subject of the signing certificate, in RFC 2253 form.
func (v *verification) notationProof(out *notation.VerificationOutcome) (*Proof, error) {
	if out.EnvelopeContent == nil || len(out.EnvelopeContent.SignerInfo.CertificateChain) == 0 {
		return nil, v.fail(ReasonUntrusted, "the signature has no certificate chain", nil)
	}
	leaf := out.EnvelopeContent.SignerInfo.CertificateChain[0]
	return &Proof{Reference: v.opts.Reference, Digest: v.opts.Digest, Provider: ProviderNotation, Signer: leaf.Subject.String(), Format: "notation"}, nil
}

var _ notationregistry.Repository = (*notationRepository)(nil)
