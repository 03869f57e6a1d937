package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller/inputs"
	"github.com/berthdev/berth/internal/provenance"
)

// The providers of spec.chart.verify.
const (
	providerPGP    = "pgp"
	providerCosign = "cosign"
)

// The default keys of the cosign Secrets, as cosign and Sigstore name their files.
const (
	keyCosignKey   = "cosign.pub"
	keyTrustedRoot = "trusted_root.json"
)

// cosignRef is what spec.chart.verify.cosign asks: the Secret (and key) of the public key, or
// keyless, the signer's identity and issuer and the Secret (and key) of the trusted root.
type cosignRef struct {
	Key, KeyKey                                    string
	Identity, IdentityRegexp, Issuer, IssuerRegexp string
	Root, RootKey                                  string
}

// verified says whether the chart of ref is verified before it is released.
func (r chartRef) verified() bool { return r.Verify != "" || r.Cosign != nil || r.Notation != "" }

// verifyOf checks spec.chart.verify v of a chart that is in an OCI registry when oci, and
// sets in ref what it asks.
func verifyOf(v *v1alpha1.KeyringReference, oci bool, ref *chartRef) error {
	switch cmp.Or(v.Provider, providerPGP) {
	case providerPGP:
		if v.Cosign != nil {
			return invalid("chart.verify.cosign", "applies to provider cosign only: set chart.verify.provider to cosign, or remove cosign")
		}
		if v.Notation != nil {
			return invalid("chart.verify.notation", "applies to provider notation only: set chart.verify.provider to notation, or remove notation")
		}
		if v.Name == "" {
			return invalid("chart.verify.name", "is required: name the Secret, in the Release's namespace, with the public keyring")
		}
		ref.Verify, ref.VerifyKey = v.Name, cmp.Or(v.Key, keyKeyring)
		return nil
	case providerCosign:
		switch {
		case v.Notation != nil:
			return invalid("chart.verify.notation", "applies to provider notation only: set chart.verify.provider to notation, or remove notation")
		case !oci:
			return invalid("chart.verify.provider", "cosign verifies charts of OCI registries (oci://) only: a chart of a Helm repository has no signature cosign would find: use provider pgp with its provenance file, or serve the chart from an OCI registry")
		case v.Name != "" || v.Key != "":
			return invalid("chart.verify.name", "names a PGP keyring, which provider cosign does not use: put the cosign public key's Secret in chart.verify.cosign.key, or remove name and key")
		case v.Cosign == nil:
			return invalid("chart.verify.cosign", "is required with provider cosign: give cosign.key (a Secret with the PEM public key), or keyless cosign.identity, cosign.issuer and cosign.trustedRoot")
		}
		c, err := cosignOf(*v.Cosign)
		ref.Cosign = c
		return err
	case providerNotation:
		switch {
		case !oci:
			return invalid("chart.verify.provider", "notation verifies charts of OCI registries (oci://) only: a chart of a Helm repository has no signature notation would find: use provider pgp with its provenance file, or serve the chart from an OCI registry")
		case v.Name != "" || v.Key != "" || v.Cosign != nil:
			return invalid("chart.verify.name", "and chart.verify.cosign are of other providers, which provider notation does not use: put the Secret with the trust policy and trust store in chart.verify.notation.name")
		case v.Notation == nil || v.Notation.Name == "":
			return invalid("chart.verify.notation", "is required with provider notation: name the Secret, in the Release's namespace, with the trust policy and trust store")
		}
		ref.Notation = v.Notation.Name
		return nil
	}
	return invalid("chart.verify.provider", "%q is not a provider: give pgp, cosign or notation", v.Provider)
}

// cosignOf checks spec.chart.verify.cosign c: a key, or keyless an identity, an issuer and a
// trusted root, never both.
func cosignOf(c v1alpha1.CosignVerification) (*cosignRef, error) {
	keyless := c.Identity != "" || c.IdentityRegexp != "" || c.Issuer != "" || c.IssuerRegexp != "" || c.TrustedRoot != nil
	if c.Key != nil {
		switch {
		case keyless:
			return nil, invalid("chart.verify.cosign.key", "and the keyless identity, issuer and trustedRoot exclude each other: verify with a public key, or keyless, not both")
		case c.Key.Name == "":
			return nil, invalid("chart.verify.cosign.key.name", "is required: name the Secret, in the Release's namespace, with the PEM public key")
		}
		return &cosignRef{Key: c.Key.Name, KeyKey: cmp.Or(c.Key.Key, keyCosignKey)}, nil
	}
	if err := onePattern("chart.verify.cosign.identity", c.Identity, c.IdentityRegexp); err != nil {
		return nil, err
	}
	if err := onePattern("chart.verify.cosign.issuer", c.Issuer, c.IssuerRegexp); err != nil {
		return nil, err
	}
	if c.TrustedRoot == nil || c.TrustedRoot.Name == "" {
		return nil, invalid("chart.verify.cosign.trustedRoot", "is required keyless: name the Secret, in the Release's namespace, with the Sigstore trusted_root.json the signature's certificate and log entry are checked against (or give cosign.key to verify with a public key)")
	}
	return &cosignRef{
		Identity: c.Identity, IdentityRegexp: c.IdentityRegexp, Issuer: c.Issuer, IssuerRegexp: c.IssuerRegexp,
		Root: c.TrustedRoot.Name, RootKey: cmp.Or(c.TrustedRoot.Key, keyTrustedRoot),
	}, nil
}

// onePattern checks that exactly one of field's exact value and its regular expression
// (fieldRegexp) is given, and that the expression compiles.
func onePattern(field, exact, expr string) error {
	switch {
	case exact != "" && expr != "":
		return invalid(field, "and %sRegexp exclude each other: give one of them", field)
	case exact == "" && expr == "":
		return invalid(field, "is required keyless: give %s, or %sRegexp (anchored), or verify with cosign.key", field, field)
	case expr != "":
		if _, err := regexp.Compile("^(?:" + expr + ")$"); err != nil {
			return invalid(field+"Regexp", "is not a regular expression: %v", err)
		}
	}
	return nil
}

// against says what a cosign verification of c checks against, for messages: the key's
// Secret, or the keyless identity and issuer and the trusted root's Secret.
func (c cosignRef) against(namespace string) string {
	if c.Key != "" {
		return fmt.Sprintf("the public key of Secret/%s/%s key %s", namespace, c.Key, c.KeyKey)
	}
	return fmt.Sprintf("identity %q issued by %q with the trusted root of Secret/%s/%s key %s",
		cmp.Or(c.Identity, c.IdentityRegexp), cmp.Or(c.Issuer, c.IssuerRegexp), namespace, c.Root, c.RootKey)
}

// readCosign reads, with r, the public key or the trusted root c names, checked and within
// provenance's limit of a piece of material, into the options a verification takes.
func readCosign(ctx context.Context, r inputs.KeyReader, c cosignRef) (*provenance.CosignOptions, error) {
	o := &provenance.CosignOptions{
		CertificateIdentity: c.Identity, CertificateIdentityRegexp: c.IdentityRegexp,
		CertificateOIDCIssuer: c.Issuer, CertificateOIDCIssuerRegexp: c.IssuerRegexp,
	}
	name, key, field := c.Root, c.RootKey, "chart.verify.cosign.trustedRoot"
	if c.Key != "" {
		name, key, field = c.Key, c.KeyKey, "chart.verify.cosign.key"
	}
	data, err := r.Read(ctx, "Secret", name, key)
	if err != nil {
		return nil, credentialsMissing(err, field)
	}
	fail := func(err error) error {
		return &ChartAccessError{Namespace: r.Namespace, Name: name, Key: key, Field: field, Err: err}
	}
	if limit := provenance.DefaultLimits().MaxMaterialBytes; int64(len(data)) > limit {
		return nil, fail(&provenance.BoundsError{What: fmt.Sprintf("its %d bytes", len(data)), Limit: limit})
	}
	if c.Key != "" {
		if _, _, err := provenance.ParsePublicKey(data); err != nil {
			return nil, fail(errors.New("holds no PEM public key (as cosign generate-key-pair writes cosign.pub)"))
		}
		o.PublicKey = data
		return o, nil
	}
	if _, err := provenance.ParseTrustedRoot(data); err != nil {
		return nil, fail(errors.New("holds no Sigstore trusted root (trusted_root.json)"))
	}
	o.TrustedRoot = data
	return o, nil
}

// CosignVerificationError is a chart whose cosign or notation signature did not verify as
// spec.chart.verify asks: none refers to its digest, or none is by the key, identity, issuer or
// trust store given, or the signature is not in the transparency log. The chart is not
// released. It names the chart, its digest and the reason, never the key's bytes.
type CosignVerificationError struct {
	// Chart is the chart's reference (and version constraint).
	Chart string
	// Against is what it was verified against: the key's Secret, or the keyless identity.
	Against string
	Sig     *provenance.Error
}

func (e *CosignVerificationError) Error() string {
	msg := fmt.Sprintf("chart %s (digest %s) failed %s verification against %s: %s", e.Chart, e.Sig.Digest, e.Sig.Provider, e.Against, e.Sig.Reason)
	if e.Sig.Detail != "" {
		msg += ": " + e.Sig.Detail
	}
	if e.Sig.Err != nil {
		msg += ": " + oneLine(e.Sig.Err)
	}
	if e.Sig.Provider == provenance.ProviderNotation {
		return msg + ": " + notationNext(e.Sig.Reason)
	}
	return msg + ": " + cosignNext(e.Sig.Reason)
}

// notationNext says what to do about a notation verification that failed for reason r.
func notationNext(r provenance.Reason) string {
	switch r {
	case provenance.ReasonNoSignature:
		return "sign the chart's digest with notation (notation sign), or fix spec.chart.verify"
	case provenance.ReasonUntrusted:
		return "the signature's certificate does not chain to a CA of the trust store its statement names, or expired or was revoked: fix the trust store in spec.chart.verify.notation's Secret, or have the chart signed by it"
	case provenance.ReasonWrongIdentity:
		return "the signing certificate's subject is not among the statement's trustedIdentities: fix the trust policy in spec.chart.verify.notation's Secret"
	}
	return "fix the trust policy and trust store in spec.chart.verify.notation's Secret"
}

// cosignNext says what to do about a verification that failed for reason r.
func cosignNext(r provenance.Reason) string {
	switch r {
	case provenance.ReasonNoSignature:
		return "sign the chart's digest with cosign (cosign sign), or fix spec.chart.verify"
	case provenance.ReasonUntrusted:
		return "the signature is not by the key or trusted root given: fix spec.chart.verify.cosign, or have the chart signed by it"
	case provenance.ReasonWrongIdentity:
		return "the signer is not the identity given: fix spec.chart.verify.cosign.identity, or have the chart signed by it"
	case provenance.ReasonWrongIssuer:
		return "the signer's identity was issued by another OIDC issuer: fix spec.chart.verify.cosign.issuer"
	case provenance.ReasonNotInLog:
		return "the signature has no transparency log entry the trusted root vouches for: sign it with the log, or fix spec.chart.verify.cosign.trustedRoot"
	}
	return "fix spec.chart.verify.cosign"
}

func (e *CosignVerificationError) Unwrap() error { return e.Sig }

func (e *CosignVerificationError) conditionReason() string { return ReasonVerificationFailed }
