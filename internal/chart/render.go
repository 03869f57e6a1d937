package chart

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/postrenderer"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/yamlbound"
)

const notesFile = "NOTES.txt"

// RenderOptions describe the release a chart is rendered for.
type RenderOptions struct {
	ReleaseName string
	Namespace   string
	// Revision is .Release.Revision; 0 means 1.
	Revision int
	// IsUpgrade sets .Release.IsUpgrade; otherwise .Release.IsInstall is set.
	IsUpgrade bool
	// Capabilities are the cluster's; nil means Helm's defaults, as for `helm template`.
	Capabilities *common.Capabilities
	// IncludeCRDs puts the chart's crds/ files at the head of Manifest, as `helm template
	// --include-crds` does. CRDs is filled either way.
	IncludeCRDs bool
	// SubchartNotes includes the subcharts' NOTES.txt in Notes (--render-subchart-notes).
	SubchartNotes bool
	// SkipSchemaValidation skips values.schema.json (--skip-schema-validation).
	SkipSchemaValidation bool
	// EnableDNS lets the templates' getHostByName resolve names (--enable-dns); without it,
	// getHostByName returns "", as in Helm.
	EnableDNS bool
	// HideSecret writes each v1 Secret of Manifest as a comment saying it is hidden, as Helm's
	// --hide-secret does for a dry run; Resources keep the Secrets.
	HideSecret bool
	// Cluster is the cluster the templates' lookup function reads, as Helm's install and
	// upgrade do; nil renders offline, with lookup returning nothing, as helm template does.
	Cluster *rest.Config
	// Templates runs the template step; nil runs it in this process (InProcess).
	Templates TemplateRunner
	// PostRenderer, when set, rewrites the rendered templates before they are split into
	// resources and hooks, as Helm v4's --post-renderer does.
	PostRenderer postrenderer.PostRenderer
}

// Rendered is a chart rendered for one release revision.
type Rendered struct {
	// Chart is the chart as Helm stores it in the release record: subcharts disabled by
	// conditions or tags removed, import-values applied.
	Chart *chartv2.Chart
	// Config is the user-supplied values, as Helm records them.
	Config map[string]any
	// Values is what templates saw as .Values: Config coalesced with the charts' defaults.
	Values map[string]any
	// Manifest is exactly the text Helm stores as the release's manifest and `helm template`
	// prints before the hooks: every non-hook document under a "# Source:" header, in install order.
	Manifest string
	// Resources are the objects of Manifest, in install order (CRDs from crds/ excluded).
	Resources []*unstructured.Unstructured
	// Parsed holds the documents of Manifest as parsed for Resources, so that reading Manifest
	// again (to order it, or as the record of a revision that rendered the same) parses nothing.
	Parsed *resource.Parsed
	// Hooks are the hooks in Helm's order (by kind), with their annotations parsed.
	Hooks []resource.Hook
	// ReleaseHooks are the same hooks as Helm records them in the release.
	ReleaseHooks []*release.Hook
	// CRDs are the objects of the charts' crds/ directories.
	CRDs []*unstructured.Unstructured
	// Notes is the rendered NOTES.txt.
	Notes string
}

// Render renders ch with the user-supplied values vals for a release, exactly as Helm v4's
// install (or upgrade) does: dependencies are processed, values coalesced with the chart's
// defaults and validated against values.schema.json, templates executed, NOTES.txt set apart and
// hooks split from resources and sorted. ch itself is not modified.
func Render(ctx context.Context, ch *chartv2.Chart, vals map[string]any, opts RenderOptions) (*Rendered, error) {
	if err := chartutil.ValidateReleaseName(opts.ReleaseName); err != nil {
		return nil, fmt.Errorf("release name %q: %w", opts.ReleaseName, err)
	}
	name := ch.Name()
	switch ch.Metadata.Type {
	case "", "application":
	default:
		return nil, fmt.Errorf("chart %s: %s charts are not installable", name, ch.Metadata.Type)
	}
	caps := opts.Capabilities
	if caps == nil {
		caps = common.DefaultCapabilities.Copy()
	}
	if kv := ch.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart %s requires kubeVersion: %s which is incompatible with Kubernetes %s", name, kv, caps.KubeVersion.Version)
	}

	ch = cloneChart(ch)
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return nil, fmt.Errorf("chart %s: process dependencies: %w", name, &CoalesceError{Err: err})
	}
	revision := opts.Revision
	if revision == 0 {
		revision = 1
	}
	releaseOpts := common.ReleaseOptions{
		Name:      opts.ReleaseName,
		Namespace: opts.Namespace,
		Revision:  revision,
		IsInstall: !opts.IsUpgrade,
		IsUpgrade: opts.IsUpgrade,
	}
	// Helm's own validation flattens its errors into text: validateValues validates as it does,
	// with an error that can leave the values out.
	top, err := util.ToRenderValuesWithSchemaValidation(ch, vals, releaseOpts, caps, true)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", name, &CoalesceError{Err: err})
	}
	if !opts.SkipSchemaValidation {
		coalesced, _ := top["Values"].(common.Values)
		if err := validateValues(ch, coalesced); err != nil {
			return nil, fmt.Errorf("chart %s: %w", name, err)
		}
	}
	files, err := runTemplates(ctx, opts.Templates, TemplateStep{Chart: ch, Top: top, Cluster: opts.Cluster, EnableDNS: opts.EnableDNS})
	if err != nil {
		return nil, err
	}

	r := &Rendered{Chart: ch, Config: vals, Notes: takeNotes(files, name, opts.SubchartNotes)}
	if opts.PostRenderer != nil {
		if files, err = postRender(opts.PostRenderer, files); err != nil {
			return nil, fmt.Errorf("render chart %s: %w", name, err)
		}
	}
	if v, ok := top["Values"].(common.Values); ok {
		r.Values = v.AsMap()
	}
	if err := checkAliases(files); err != nil {
		return nil, fmt.Errorf("render chart %s: %w", name, err)
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("render chart %s: %w", name, sortError(files, err))
	}
	r.ReleaseHooks = hooks
	crds := ch.CRDObjects()
	r.Manifest = manifestText(crds, manifests, opts.IncludeCRDs, opts.HideSecret)
	if err := r.parse(crds, manifests, opts.HideSecret); err != nil {
		return nil, fmt.Errorf("render chart %s: %w", name, err)
	}
	return r, nil
}

// runTemplates runs step with runner (InProcess when nil): a budget's error as it is, the
// templates' own as a *TemplateError.
func runTemplates(ctx context.Context, runner TemplateRunner, step TemplateStep) (map[string]string, error) {
	if runner == nil {
		runner = InProcess{}
	}
	files, err := runner.RunTemplates(ctx, step)
	var budget *RenderBudgetError
	var renderer *RendererError
	switch {
	case err == nil:
		return files, nil
	case errors.As(err, &budget):
		return nil, err
	case errors.As(err, &renderer):
		return nil, fmt.Errorf("render chart %s: %w", step.Chart.Name(), err)
	}
	return nil, fmt.Errorf("render chart %s: %w", step.Chart.Name(), templateError(err))
}

// takeNotes removes the NOTES.txt files from files and returns the chart's notes, followed by
// the subcharts' (in path order; Helm's order is random) when sub is set.
func takeNotes(files map[string]string, chartName string, sub bool) string {
	top := path.Join(chartName, "templates", notesFile)
	var keys []string
	for k := range files {
		if strings.HasSuffix(k, notesFile) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		if (a == top) != (b == top) {
			if a == top {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var notes strings.Builder
	for _, k := range keys {
		if sub || k == top {
			if notes.Len() > 0 {
				notes.WriteString("\n")
			}
			notes.WriteString(files[k])
		}
		delete(files, k)
	}
	return notes.String()
}

// manifestText writes the manifest as Helm's renderResources does.
func manifestText(crds []chartv2.CRD, manifests []releaseutil.Manifest, includeCRDs, hideSecret bool) string {
	var b strings.Builder
	if includeCRDs {
		for _, crd := range crds {
			fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", crd.Filename, string(crd.File.Data))
		}
	}
	for _, m := range manifests {
		if hidden(m, hideSecret) {
			fmt.Fprintf(&b, "---\n# Source: %s\n# HIDDEN: The Secret output has been suppressed\n", m.Name)
			continue
		}
		b.WriteString("---" + documentText(m))
	}
	return b.String()
}

// hidden says manifestText writes m as hidden: a v1 Secret, with hideSecret.
func hidden(m releaseutil.Manifest, hideSecret bool) bool {
	return hideSecret && m.Head != nil && m.Head.Kind == "Secret" && m.Head.Version == "v1"
}

// documentText is the text of m in the manifest after its "---", as resource.SplitManifest
// gives it.
func documentText(m releaseutil.Manifest) string {
	return fmt.Sprintf("\n# Source: %s\n%s\n", m.Name, m.Content)
}

// parse fills Resources, Parsed, Hooks and CRDs from Helm's sorted output.
func (r *Rendered) parse(crds []chartv2.CRD, manifests []releaseutil.Manifest, hideSecret bool) error {
	r.Parsed = &resource.Parsed{}
	for i, m := range manifests {
		obj, err := resource.ParseDocument(resource.Document{Source: m.Name, Index: i + 1, Content: m.Content})
		if err != nil {
			return err
		}
		if !hidden(m, hideSecret) {
			r.Parsed.Remember(documentText(m), obj)
		}
		if obj != nil {
			r.Resources = append(r.Resources, obj)
		}
	}
	for i, h := range r.ReleaseHooks {
		obj, err := resource.ParseDocument(resource.Document{Source: h.Path, Index: i + 1, Content: h.Manifest})
		if err != nil {
			return err
		}
		if obj == nil {
			return fmt.Errorf("%s: hook %s is empty", h.Path, h.Name)
		}
		hook, _, err := resource.ParseHook(obj)
		if err != nil {
			return fmt.Errorf("%s: %w", h.Path, err)
		}
		r.Hooks = append(r.Hooks, hook)
	}
	for _, crd := range crds {
		for _, doc := range resource.SplitManifest(string(crd.File.Data)) {
			doc.Source = crd.Filename
			obj, err := resource.ParseDocument(doc)
			if err != nil {
				return err
			}
			if obj != nil {
				r.CRDs = append(r.CRDs, obj)
			}
		}
	}
	return nil
}

// checkAliases refuses a rendered template whose YAML aliases would add more than
// yamlbound.Tenant once expanded: splitting the manifests parses each document, and every parse
// after it expands them again.
func checkAliases(files map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := yamlbound.CheckString(files[name], yamlbound.Tenant); err != nil {
			return fmt.Errorf("template %s: %w", name, err)
		}
	}
	return nil
}

// sortError is the error of Helm's sorting of the rendered files: its words quote the text the
// YAML parser failed on, which holds values, so only the file it names and the line are kept
// (resource.SyntaxError).
func sortError(files map[string]string, err error) error {
	msg := err.Error()
	source := ""
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if strings.Contains(msg, "on "+name+":") && len(name) > len(source) {
			source = name
		}
	}
	return resource.SyntaxErrorOf(source, 0, err)
}
