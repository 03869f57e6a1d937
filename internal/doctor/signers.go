package doctor

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/resource"
)

// anchoredList compiles the regular expressions of a JSON array of strings, as the controller
// writes its allowed signers or issuers on its Lease, anchored as the controller anchors them;
// nil when there are none, and for what does not parse.
func anchoredList(annotation string) []*regexp.Regexp {
	var exprs []string
	if annotation == "" || json.Unmarshal([]byte(annotation), &exprs) != nil {
		return nil
	}
	var out []*regexp.Regexp
	for _, e := range exprs {
		if re, err := regexp.Compile("^(?:" + e + ")$"); err == nil {
			out = append(out, re)
		}
	}
	return out
}

// refuses says whether c refuses a chart verified with proof p for its signer or its keyless
// issuer, as the controller does.
func (c liveController) refuses(p *v1alpha1.ChartProof) bool {
	if !c.requireVerified || p == nil {
		return false
	}
	match := func(res []*regexp.Regexp, s string) bool {
		return slices.ContainsFunc(res, func(re *regexp.Regexp) bool { return re.MatchString(s) })
	}
	return len(c.signers) > 0 && !match(c.signers, p.Signer) || p.Issuer != "" && len(c.issuers) > 0 && !match(c.issuers, p.Issuer)
}

// runningUnallowed are the Releases of rels that run a chart (a revision is deployed) verified
// with a signer that a controller of ctrls that serves them does not allow.
func runningUnallowed(rels []v1alpha1.Release, ctrls []liveController) []v1alpha1.Release {
	var out []v1alpha1.Release
	for _, rel := range rels {
		if rel.Status.Revision == 0 || rel.Status.ChartVerified == nil {
			continue
		}
		if slices.ContainsFunc(ctrls, func(c liveController) bool {
			return c.serves(rel.Namespace, rel.Labels) && c.refuses(rel.Status.ChartVerified)
		}) {
			out = append(out, rel)
		}
	}
	return out
}

// unallowedFinding names a Release that runs a chart whose signer the controller that serves it
// does not allow.
func unallowedFinding(rel v1alpha1.Release) Finding {
	p := rel.Status.ChartVerified
	who := fmt.Sprintf("signer %q", p.Signer)
	if p.Issuer != "" {
		who += fmt.Sprintf(" (issued by %q)", p.Issuer)
	}
	return Finding{
		Severity: Warning, Check: "verification",
		Object: resource.Identity{Group: berthReleaseGVR.Group, Kind: "Release", Namespace: rel.Namespace, Name: rel.Name},
		Problem: fmt.Sprintf("it runs revision %d of chart %s %s, verified with %s, whom the controller that serves it does not allow (--allowed-signer, --allowed-issuer)",
			rel.Status.Revision, rel.Status.ChartName, rel.Status.ChartVersion, who),
		Breaks: "the controller refuses it (VerificationRequired): it is neither upgraded nor corrected until its chart is signed by an allowed signer",
		Fix:    fmt.Sprintf("have the chart of Release %s/%s signed by an allowed signer and point spec.chart.verify at that signer's key or identity, or allow this signer in the controller's policy", rel.Namespace, rel.Name),
	}
}
