package release

import chart "helm.sh/helm/v4/pkg/chart/v2"

// ChartName is a release's chart as Helm's list and history show it: NAME-VERSION, or MISSING
// when the record holds no chart.
func ChartName(c *chart.Chart) string {
	if c == nil || c.Metadata == nil {
		return "MISSING"
	}
	return c.Name() + "-" + c.Metadata.Version
}

// AppVersion is a release's chart's app version as Helm shows it, or MISSING.
func AppVersion(c *chart.Chart) string {
	if c == nil || c.Metadata == nil {
		return "MISSING"
	}
	return c.AppVersion()
}
