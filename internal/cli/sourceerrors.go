package cli

import (
	"errors"
	"fmt"
	"strings"

	"helm.sh/helm/v4/pkg/registry"

	"github.com/berthdev/berth/internal/provenance"
	"github.com/berthdev/berth/internal/source"
)

// hintedError is an error followed by what to do about it.
type hintedError struct {
	err  error
	hint string
}

func (e *hintedError) Error() string { return e.err.Error() + ": " + e.hint }

func (e *hintedError) Unwrap() error { return e.err }

// explainSourceError adds to a chart reference that failed what to do about it, on the same
// line. Other errors are returned as they are.
func explainSourceError(err error) error {
	var se *source.Error
	if !errors.As(err, &se) {
		return err
	}
	if hint := signatureHint(err); hint != "" {
		return &hintedError{err: err, hint: hint}
	}
	if se.Host != "" {
		return withRegistryHint(err)
	}
	if hint := sourceHint(se); hint != "" {
		return &hintedError{err: err, hint: hint}
	}
	return err
}

func sourceHint(e *source.Error) string {
	oci := registry.IsOCI(e.Ref)
	switch e.Kind {
	case source.KindNoChart:
		if name, _, ok := strings.Cut(e.Ref, "/"); ok && !strings.HasPrefix(e.Ref, ".") && !strings.HasPrefix(e.Ref, "/") {
			return fmt.Sprintf("no such chart directory or archive, and no repository named %q: add it with `berth repo add %s URL`, or give a chart directory, a packaged chart (.tgz), a URL or an oci:// reference", name, name)
		}
		return "give a chart directory, a packaged chart (.tgz), REPO/CHART of an added repository, a URL or an oci:// reference"
	case source.KindNotIndexed:
		_, chartName, _ := strings.Cut(e.Ref, "/")
		return fmt.Sprintf("run `berth repo update %s` to fetch its latest index, and list what it holds with `berth search repo %s/%s --versions`", e.RepoName, e.RepoName, chartName)
	case source.KindNotInRepository:
		return "check the chart's name and --version against the repository's index.yaml (--devel to include pre-releases)"
	case source.KindUnreachable:
		return "check the URL, the network and any proxy (HTTPS_PROXY), then try again"
	case source.KindUnauthorized:
		switch {
		case oci:
			return "log in with `berth registry login HOST` or give --username and --password"
		case e.RepoName != "":
			return fmt.Sprintf("give repository %s the right credentials with `berth repo add %s URL --username USER --password-stdin --force-update`", e.RepoName, e.RepoName)
		default:
			return "give the right credentials with --username and --password"
		}
	case source.KindMissing:
		return "check the URL: the server has nothing there"
	case source.KindTLS:
		return "give the CA that signed the server's certificate with --ca-file (or skip the check with --insecure-skip-tls-verify)"
	case source.KindUnverified:
		return "the chart must come with a provenance file (.prov) signed by a key in --keyring; without --verify it is not checked"
	case source.KindNotChart:
		return "the reference must name a packaged chart (.tgz) or a directory with a Chart.yaml"
	case source.KindNoGetter:
		return "install a getter plugin that serves it with `berth plugin install`; `berth plugin list` lists those installed"
	}
	return ""
}

// signatureHint says what to do about a chart whose signature did not verify, by why; "" for
// another error.
func signatureHint(err error) string {
	var pe *provenance.Error
	switch {
	case errors.Is(err, source.ErrNotSigned):
		return "give the chart by its oci:// reference, or verify a provenance file (.prov) with --verify instead"
	case !errors.As(err, &pe):
		return ""
	case pe.Provider == provenance.ProviderNotation:
		return notationHint(pe.Reason)
	}
	switch pe.Reason {
	case provenance.ReasonNoSignature:
		return "sign the chart's digest with `cosign sign` (or ask its publisher to), and check that the reference names the chart that was signed"
	case provenance.ReasonUntrusted:
		return fmt.Sprintf("a signature is there, but not one that verifies with the key given (--%s) or, keyless, with a certificate of the trusted root (--%s): check which key or root signs this chart", flagCosignKey, flagTrustedRoot)
	case provenance.ReasonWrongIdentity:
		return fmt.Sprintf("the signature's certificate names another identity: check --%s or --%s against who signs the chart", flagCertIdentity, flagCertIdentityRegexp)
	case provenance.ReasonWrongIssuer:
		return fmt.Sprintf("the signer's identity was vouched for by another OIDC issuer: check --%s or --%s", flagCertOIDCIssuer, flagCertOIDCIssuerRegexp)
	case provenance.ReasonNotInLog:
		return fmt.Sprintf("a keyless signature must be in a transparency log of the trusted root: check --%s", flagTrustedRoot)
	case provenance.ReasonInvalidOptions:
		return fmt.Sprintf("check the key (--%s), the trusted root (--%s) and the regular expressions given", flagCosignKey, flagTrustedRoot)
	}
	return ""
}

// notationHint says what to do about a chart whose notation signature did not verify.
func notationHint(r provenance.Reason) string {
	switch r {
	case provenance.ReasonNoSignature:
		return "sign the chart's digest with `notation sign` (or ask its publisher to), and check that the reference names the chart that was signed"
	case provenance.ReasonUntrusted:
		return "a signature is there, but its certificate does not chain to a CA of the trust store the trust policy names (truststore/x509/ca/NAME), or it expired or was revoked"
	case provenance.ReasonWrongIdentity:
		return "the signing certificate's subject is not among the trust policy statement's trustedIdentities"
	case provenance.ReasonInvalidOptions:
		return fmt.Sprintf("check the trust policy (trustpolicy.oci.json) and trust store of notation's configuration directory, or of --%s", flagNotationConfig)
	}
	return ""
}
