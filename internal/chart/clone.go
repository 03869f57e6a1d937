package chart

import (
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// cloneChart copies what Helm's dependency processing and value reuse change in a chart (its
// metadata's dependency list and their Enabled flags, its values, its subcharts), so that
// rendering leaves the caller's chart as it was. Templates and files are shared: nothing changes
// them.
func cloneChart(c *chartv2.Chart) *chartv2.Chart {
	cp := *c
	if c.Metadata != nil {
		md := *c.Metadata
		if c.Metadata.Dependencies != nil {
			md.Dependencies = make([]*chartv2.Dependency, len(c.Metadata.Dependencies))
			for i, d := range c.Metadata.Dependencies {
				if d != nil {
					dc := *d
					md.Dependencies[i] = &dc
				}
			}
		}
		cp.Metadata = &md
	}
	subs := c.Dependencies()
	clones := make([]*chartv2.Chart, len(subs))
	for i, s := range subs {
		clones[i] = cloneChart(s)
	}
	cp.SetDependencies(clones...)
	return &cp
}
