package cli

import (
	"fmt"
	"strings"

	"github.com/berthdev/berth/internal/release"
)

// proofOf is the proof recorded with revision rel that its chart was verified; nil when it was
// not, or when what its record says cannot be taken as such (see release.ProvenanceOf).
func proofOf(rel *release.Release) *release.Provenance {
	p, err := release.ProvenanceOf(rel)
	if err != nil {
		return nil
	}
	return p
}

// describeProof says what p proves, as berth status prints it: "no" without a proof.
func describeProof(p *release.Provenance) string {
	if p == nil {
		return "no"
	}
	parts := []string{fmt.Sprintf("%s, signed by %s", p.Provider, p.Signer)}
	if p.Issuer != "" {
		parts[0] += " (issuer " + p.Issuer + ")"
	}
	if p.LogIndex != nil {
		parts = append(parts, fmt.Sprintf("transparency log index %d", *p.LogIndex))
	}
	if p.Digest != "" {
		parts = append(parts, p.Digest)
	}
	if p.Reference != "" {
		parts = append(parts, "from "+p.Reference)
	}
	return strings.Join(parts, "; ")
}

// verifiedColumn is a revision's VERIFIED column in berth history and list: the provider its
// chart was verified with, or "no".
func verifiedColumn(p *release.Provenance) string {
	if p == nil {
		return "no"
	}
	return p.Provider
}

// signatureReport is what berth pull prints of a signature it verified, in the way Helm's
// report of a provenance file reads.
func signatureReport(p *release.Provenance) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Signed by: %s\n", p.Signer)
	if p.Issuer != "" {
		fmt.Fprintf(&b, "OIDC issuer: %s\n", p.Issuer)
	}
	if p.LogIndex != nil {
		fmt.Fprintf(&b, "Transparency log index: %d\n", *p.LogIndex)
	}
	fmt.Fprintf(&b, "Verified with %s: %s\n", p.Provider, p.Digest)
	return b.String()
}
