package cluster

import (
	"context"
	"fmt"

	"k8s.io/client-go/discovery"
)

// ServerCapabilities returns what a chart may ask of the cluster through .Capabilities: the API
// server's version and every group/version and group/version/Kind it serves, as Helm builds them.
func ServerCapabilities(_ context.Context, d discovery.DiscoveryInterface) (kubeVersion string, apiVersions []string, err error) {
	v, err := d.ServerVersion()
	if err != nil {
		return "", nil, fmt.Errorf("ask the API server its version: %w", err)
	}
	_, lists, err := d.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return "", nil, fmt.Errorf("discover the API server's resources: %w", err)
	}
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			apiVersions = append(apiVersions, s)
		}
	}
	for _, l := range lists {
		add(l.GroupVersion)
		for _, r := range l.APIResources {
			add(l.GroupVersion + "/" + r.Kind)
		}
	}
	return v.GitVersion, apiVersions, nil
}
