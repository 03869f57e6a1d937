package chart

import (
	"fmt"
	"slices"

	"helm.sh/helm/v4/pkg/chart/common"
)

// Capabilities returns Helm's default capabilities (those `helm template` renders with) with the
// given Kubernetes version, when not empty, and extra API versions added, as `helm template
// --kube-version --api-versions` builds them.
func Capabilities(kubeVersion string, apiVersions []string) (*common.Capabilities, error) {
	caps := common.DefaultCapabilities.Copy()
	if kubeVersion != "" {
		kv, err := common.ParseKubeVersion(kubeVersion)
		if err != nil {
			return nil, fmt.Errorf("invalid kube version %q: %w", kubeVersion, err)
		}
		caps.KubeVersion = *kv
	}
	caps.APIVersions = append(slices.Clone(caps.APIVersions), apiVersions...)
	return caps, nil
}
