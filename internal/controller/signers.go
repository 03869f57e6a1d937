package controller

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/berthdev/berth/internal/release"
)

// SignerPolicy is who may have signed the charts a controller releases (--allowed-signer,
// --allowed-issuer): a verified chart's signer must match one of Signers, and a keyless
// signer's OIDC issuer one of Issuers, each regular expression anchored at both ends. An empty
// list allows any.
type SignerPolicy struct {
	Signers, Issuers []*regexp.Regexp
}

// SignerPolicyError is an allowed signer or issuer that is not a regular expression.
type SignerPolicyError struct {
	// Flag is the flag that gave it: --allowed-signer or --allowed-issuer.
	Flag, Expr string
	Err        error
}

func (e *SignerPolicyError) Error() string {
	return fmt.Sprintf("%s %q: not a regular expression: %v", e.Flag, e.Expr, e.Err)
}

func (e *SignerPolicyError) Unwrap() error { return e.Err }

// NewSignerPolicy compiles the allowed signers and issuers, each anchored at both ends.
func NewSignerPolicy(signers, issuers []string) (SignerPolicy, error) {
	var p SignerPolicy
	var errs []error
	compile := func(flag string, exprs []string) []*regexp.Regexp {
		var out []*regexp.Regexp
		for _, e := range exprs {
			re, err := regexp.Compile("^(?:" + e + ")$")
			if err != nil {
				errs = append(errs, &SignerPolicyError{Flag: flag, Expr: e, Err: err})
				continue
			}
			out = append(out, re)
		}
		return out
	}
	p.Signers = compile("--allowed-signer", signers)
	p.Issuers = compile("--allowed-issuer", issuers)
	return p, errors.Join(errs...)
}

// IsZero says whether p allows any signer.
func (p SignerPolicy) IsZero() bool { return len(p.Signers) == 0 && len(p.Issuers) == 0 }

// Strings are p's expressions as they were given, for the presence Lease.
func (p SignerPolicy) strings() (signers, issuers []string) {
	for _, re := range p.Signers {
		signers = append(signers, unanchor(re))
	}
	for _, re := range p.Issuers {
		issuers = append(issuers, unanchor(re))
	}
	return signers, issuers
}

func unanchor(re *regexp.Regexp) string {
	return strings.TrimSuffix(strings.TrimPrefix(re.String(), "^(?:"), ")$")
}

// SignerNotAllowedError is a chart that verified, but whose signer (or keyless issuer) the
// controller's policy does not allow (--allowed-signer, --allowed-issuer). It is not released.
type SignerNotAllowedError struct {
	// Digest is what was signed; Signer and Issuer are the proof's.
	Digest, Signer, Issuer string
	// Flag is what refused it: --allowed-signer or --allowed-issuer.
	Flag string
}

func (e *SignerNotAllowedError) Error() string {
	who := fmt.Sprintf("signer %q", e.Signer)
	if e.Flag == "--allowed-issuer" {
		who = fmt.Sprintf("signer %q issued by %q", e.Signer, e.Issuer)
	}
	return fmt.Sprintf("the chart (digest %s) verified, but this controller's policy (%s) does not allow its %s: have the chart signed by an allowed signer, or ask the controller's operator to allow this one", e.Digest, e.Flag, who)
}

func (e *SignerNotAllowedError) conditionReason() string { return ReasonVerificationRequired }

// allows refuses, as a SignerNotAllowedError, a chart verified with proof p whose signer or
// keyless issuer p does not allow; a chart without a proof is checkVerified's to refuse.
func (p SignerPolicy) allows(proof *release.Provenance) error {
	if proof == nil {
		return nil
	}
	refused := &SignerNotAllowedError{Digest: proof.Digest, Signer: proof.Signer, Issuer: proof.Issuer}
	if len(p.Signers) > 0 && !anyMatch(p.Signers, proof.Signer) {
		refused.Flag = "--allowed-signer"
		return refused
	}
	if proof.Issuer != "" && len(p.Issuers) > 0 && !anyMatch(p.Issuers, proof.Issuer) {
		refused.Flag = "--allowed-issuer"
		return refused
	}
	return nil
}

func anyMatch(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}
