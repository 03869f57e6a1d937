package chart

import (
	"context"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/client-go/rest"
)

// TemplateStep is the step of Render that executes a chart's templates: the chart with its
// dependencies processed, and what the templates see (.Values, .Release, .Capabilities).
type TemplateStep struct {
	Chart *chartv2.Chart
	// Top is what Helm's engine is given: Values, Release, Capabilities and Chart.
	Top common.Values
	// Cluster is what lookup reads; nil renders offline.
	Cluster *rest.Config
	// EnableDNS lets getHostByName resolve names.
	EnableDNS bool
}

// Run executes the templates in this process, as Helm does: the rendered files by template path.
func (s TemplateStep) Run(ctx context.Context) (map[string]string, error) {
	var e engine.Engine
	if s.Cluster != nil {
		e = engine.New(s.Cluster)
	}
	e.EnableDNS = s.EnableDNS
	return e.RenderWithContext(ctx, s.Chart, s.Top)
}

// TemplateRunner runs the template step of Render. InProcess runs it in the caller's process;
// a *Sandbox runs it in a child process under a budget.
type TemplateRunner interface {
	RunTemplates(ctx context.Context, step TemplateStep) (map[string]string, error)
}

// InProcess runs templates in the caller's process, without a budget: text/template ignores
// ctx, so a template that loops runs for as long as it loops.
type InProcess struct{}

func (InProcess) RunTemplates(ctx context.Context, step TemplateStep) (map[string]string, error) {
	return step.Run(ctx)
}
