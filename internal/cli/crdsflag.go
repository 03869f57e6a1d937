package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/berthdev/berth/internal/lifecycle"
)

// crdsFlag is --crds: what install and upgrade do with the CRDs of the chart's crds/ directories.
// Left unset, the policy stays lifecycle.CRDsDefault (Helm's: create on install, skip on upgrade,
// so that the install an upgrade --install makes creates them); def is what help shows then.
type crdsFlag struct {
	p   *lifecycle.CRDPolicy
	def lifecycle.CRDPolicy
}

func (f crdsFlag) String() string {
	if *f.p == lifecycle.CRDsDefault {
		return string(f.def)
	}
	return string(*f.p)
}

func (f crdsFlag) Type() string { return "string" }

func (f crdsFlag) Set(s string) error {
	p := lifecycle.CRDPolicy(strings.ToLower(s))
	if !slices.Contains(lifecycle.CRDPolicies, p) {
		return fmt.Errorf("invalid --crds %q: want skip, create or create-replace", s)
	}
	*f.p = p
	return nil
}

// addCRDsFlag adds --crds; def is the command's default, as help shows it.
func addCRDsFlag(f *pflag.FlagSet, p *lifecycle.CRDPolicy, def lifecycle.CRDPolicy, usage string) {
	f.Var(crdsFlag{p: p, def: def}, "crds", `what to do with the CRDs of the chart's crds/ directory: "skip" them, "create" the missing ones, or "create-replace": create the missing ones and update the existing ones (never deleted; an update that drops a stored version or changes a CRD's group, scope or kind is refused)`+usage)
}

// addForceReplaceFlag adds --force-replace, as Helm v4 names it, and --force, its deprecated
// spelling.
func addForceReplaceFlag(f *pflag.FlagSet, forceReplace *bool) {
	f.BoolVar(forceReplace, "force-replace", false, "force resource updates by replacement: an object whose change the API server refuses as immutable (a Deployment's selector, a Service's clusterIP) is deleted, waited for until gone, and created again")
	f.BoolVar(forceReplace, "force", false, "deprecated")
	_ = f.MarkDeprecated("force", "use --force-replace instead")
}

// crdPolicy is the policy --crds (p, given when set) and --skip-crds (skip), Helm's spelling of
// --crds skip, say together; they must agree.
func crdPolicy(p lifecycle.CRDPolicy, set, skip bool) (lifecycle.CRDPolicy, error) {
	switch {
	case !skip:
		return p, nil
	case set && p != lifecycle.CRDsSkip:
		return "", fmt.Errorf("--skip-crds and --crds %s contradict each other: give one of them (--skip-crds is --crds skip)", p)
	}
	return lifecycle.CRDsSkip, nil
}
