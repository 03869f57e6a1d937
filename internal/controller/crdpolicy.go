package controller

import (
	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/lifecycle"
)

// crdPolicy is the lifecycle's policy for a Release's spec.install.crds or spec.upgrade.crds:
// unset is Helm's default (create on install, skip on upgrade).
func crdPolicy(p v1alpha1.CRDsPolicy) lifecycle.CRDPolicy {
	switch p {
	case v1alpha1.CRDsSkip:
		return lifecycle.CRDsSkip
	case v1alpha1.CRDsCreate:
		return lifecycle.CRDsCreate
	case v1alpha1.CRDsCreateReplace:
		return lifecycle.CRDsCreateReplace
	}
	return lifecycle.CRDsDefault
}
