package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/berthdev/berth/internal/provenance"
)

// The flags that verify a chart's cosign signatures, with the names `cosign verify` gives them
// (--cosign-key for its --key, which would read as the TLS key of --key-file).
const (
	flagCosignKey            = "cosign-key"
	flagCertIdentity         = "certificate-identity"
	flagCertIdentityRegexp   = "certificate-identity-regexp"
	flagCertOIDCIssuer       = "certificate-oidc-issuer"
	flagCertOIDCIssuerRegexp = "certificate-oidc-issuer-regexp"
	flagTrustedRoot          = "trusted-root"
	flagNotation             = "notation"
	flagNotationConfig       = "notation-config"
)

// keylessFlags are the flags of keyless verification.
var keylessFlags = []string{flagCertIdentity, flagCertIdentityRegexp, flagCertOIDCIssuer, flagCertOIDCIssuerRegexp, flagTrustedRoot}

// maxMaterialFile bounds a key or trusted root file read for verification.
const maxMaterialFile = 1 << 20

// addSignatureFlags adds the flags that verify a chart of an OCI registry by its cosign or
// notation signatures.
func addSignatureFlags(f *pflag.FlagSet) {
	f.Bool(flagNotation, false, "verify the chart's Notary Project signature with notation's trust policy and trust store, from notation's configuration directory ($NOTATION_CONFIG, else notation under your configuration directory); the chart must come from an OCI registry")
	f.String(flagNotationConfig, "", "like --notation, with the trust policy (trustpolicy.oci.json) and trust store (truststore/x509/...) of this directory")
	f.String(flagCosignKey, "", "verify the chart's cosign signature with this public key file (PEM, as cosign.pub); the chart must come from an OCI registry")
	f.String(flagCertIdentity, "", "verify the chart's keyless cosign signature: the identity its certificate must name (an email or URI); needs --certificate-oidc-issuer[-regexp] and --trusted-root")
	f.String(flagCertIdentityRegexp, "", "like --certificate-identity, a regular expression the identity must match")
	f.String(flagCertOIDCIssuer, "", "verify the chart's keyless cosign signature: the OIDC issuer that must have vouched for its identity, e.g. https://token.actions.githubusercontent.com")
	f.String(flagCertOIDCIssuerRegexp, "", "like --certificate-oidc-issuer, a regular expression the issuer must match")
	f.String(flagTrustedRoot, "", "the Sigstore trusted root (trusted_root.json) that keyless signatures, their certificates and transparency log entries are checked against")
}

// notationOptions are what the notation flags of f ask for, notation's files read: nil when
// neither is given (or f has none). The other flags checked are pgp (--verify) and cosign (a
// cosign flag), which verify otherwise: only one may be asked for.
func notationOptions(f *pflag.FlagSet, pgp, cosign bool) (*provenance.NotationOptions, error) {
	asked, _ := f.GetBool(flagNotation)
	dir, _ := f.GetString(flagNotationConfig)
	switch {
	case !asked && dir == "":
		return nil, nil
	case pgp:
		return nil, fmt.Errorf("--verify checks a PGP provenance file, --%s a notation signature: give one or the other", flagNotation)
	case cosign:
		return nil, fmt.Errorf("the cosign flags verify a cosign signature, --%s a notation signature: give one or the other", flagNotation)
	}
	if dir == "" {
		var err error
		if dir, err = provenance.DefaultNotationDir(); err != nil {
			return nil, fmt.Errorf("--%s: %w", flagNotation, err)
		}
	}
	o, err := provenance.LoadNotationDir(dir, provenance.Limits{})
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flagNotationConfig, err)
	}
	return o, nil
}

// cosignOptions are what the cosign flags of f ask for, their files read: nil when none is
// given (or f has none). pgp is --verify, which checks a provenance file instead: both cannot
// be asked for at once.
func cosignOptions(f *pflag.FlagSet, pgp bool) (*provenance.CosignOptions, error) {
	get := func(name string) string {
		v, _ := f.GetString(name)
		return v
	}
	key := get(flagCosignKey)
	keyless := ""
	for _, name := range keylessFlags {
		if get(name) != "" {
			keyless = name
			break
		}
	}
	switch {
	case key == "" && keyless == "":
		return nil, nil
	case key != "" && keyless != "":
		return nil, fmt.Errorf("--%s verifies a signature made with a key, --%s one made keyless: give one or the other", flagCosignKey, keyless)
	case pgp:
		return nil, fmt.Errorf("--verify checks a PGP provenance file, the cosign flags a cosign signature: give one or the other")
	}
	if key != "" {
		pem, err := readMaterial(key, flagCosignKey)
		if err != nil {
			return nil, err
		}
		return &provenance.CosignOptions{PublicKey: pem}, nil
	}
	o := &provenance.CosignOptions{
		CertificateIdentity: get(flagCertIdentity), CertificateIdentityRegexp: get(flagCertIdentityRegexp),
		CertificateOIDCIssuer: get(flagCertOIDCIssuer), CertificateOIDCIssuerRegexp: get(flagCertOIDCIssuerRegexp),
	}
	if err := exactlyOne(flagCertIdentity, o.CertificateIdentity, flagCertIdentityRegexp, o.CertificateIdentityRegexp); err != nil {
		return nil, err
	}
	if err := exactlyOne(flagCertOIDCIssuer, o.CertificateOIDCIssuer, flagCertOIDCIssuerRegexp, o.CertificateOIDCIssuerRegexp); err != nil {
		return nil, err
	}
	root := get(flagTrustedRoot)
	if root == "" {
		return nil, fmt.Errorf("keyless verification needs --%s: the Sigstore trusted root (trusted_root.json) its certificates and log entries are checked against", flagTrustedRoot)
	}
	var err error
	if o.TrustedRoot, err = readMaterial(root, flagTrustedRoot); err != nil {
		return nil, err
	}
	return o, nil
}

// exactlyOne checks that one of the flags a and b, exact and regular expression, is given.
func exactlyOne(a, av, b, bv string) error {
	switch {
	case av == "" && bv == "":
		return fmt.Errorf("keyless verification needs --%s or --%s", a, b)
	case av != "" && bv != "":
		return fmt.Errorf("--%s and --%s say the same thing: give one", a, b)
	}
	return nil
}

// readMaterial reads the file path that flag names, up to maxMaterialFile.
func readMaterial(path, flag string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxMaterialFile+1))
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	if len(data) > maxMaterialFile {
		return nil, fmt.Errorf("--%s: %s is larger than %d bytes, more than any key or trusted root", flag, path, maxMaterialFile)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("--%s: %s is empty", flag, path)
	}
	return data, nil
}

// signatureFlagGiven reports whether a cosign or notation flag of cmd is given.
func signatureFlagGiven(cmd *cobra.Command) bool {
	for _, name := range append([]string{flagCosignKey, flagNotation, flagNotationConfig}, keylessFlags...) {
		if cmd.Flags().Changed(name) {
			return true
		}
	}
	return false
}
