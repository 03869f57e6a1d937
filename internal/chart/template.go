package chart

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"

	"github.com/berthdev/berth/internal/valuemask"
)

// TemplateOptions are the inputs of `helm template` that make sense without a cluster.
type TemplateOptions struct {
	// ChartPath is a chart directory or packaged chart, loaded unless Chart is set.
	ChartPath string
	// Chart, when set, is the chart, loaded already.
	Chart  *chartv2.Chart
	Values ValueOptions
	// Render names the release. Without its Capabilities (a cluster's, for a server dry run),
	// the capabilities are Helm's defaults with KubeVersion and APIVersions; with them, those two
	// are ignored, as helm template --dry-run=server ignores them.
	Render      RenderOptions
	KubeVersion string
	APIVersions []string
	// ShowOnly keeps only the documents rendered from these templates (chart-relative paths or
	// globs, as --show-only takes them).
	ShowOnly []string
	// SkipTests leaves out the test hooks.
	SkipTests bool
	// NoHooks leaves out every hook (--no-hooks).
	NoHooks bool
	// OutputDir, when set, makes Template write each template's documents to a file under it
	// instead of printing them, as --output-dir does; UseReleaseName puts them under
	// OutputDir/RELEASE (--release-name).
	OutputDir      string
	UseReleaseName bool
}

// Template loads, renders and prints a chart exactly as `helm template` does: the manifest, then
// the hooks, each document under its "# Source:" header.
func Template(ctx context.Context, opts TemplateOptions) (string, error) {
	caps := opts.Render.Capabilities
	if caps == nil {
		c, err := Capabilities(opts.KubeVersion, opts.APIVersions)
		if err != nil {
			return "", err
		}
		caps = c
	}
	merged, err := opts.Values.MergeValues()
	if err != nil {
		return "", err
	}
	ch := opts.Chart
	if ch == nil {
		if ch, err = Load(opts.ChartPath); err != nil {
			return "", err
		}
	}
	ro := opts.Render
	ro.Capabilities = caps
	r, err := Render(ctx, ch, merged.Values, ro)
	if err != nil {
		// A template's error can quote a value: none that came encrypted.
		return "", valuemask.Err(err, valuemask.Strings(merged.Values, merged.Encrypted))
	}
	if opts.OutputDir != "" {
		return r.writeFiles(opts)
	}
	return r.TemplateOutput(opts.ShowOnly, opts.SkipTests, opts.NoHooks)
}

// TemplateOutput prints r as `helm template` does, with its --show-only, --skip-tests and
// --no-hooks.
func (r *Rendered) TemplateOutput(showOnly []string, skipTests, noHooks bool) (string, error) {
	var b strings.Builder
	fmt.Fprintln(&b, strings.TrimSpace(r.Manifest))
	for _, h := range r.templateHooks(skipTests, noHooks) {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	if len(showOnly) == 0 {
		return b.String(), nil
	}
	return selectTemplates(b.String(), showOnly)
}

// templateHooks are the hooks helm template shows.
func (r *Rendered) templateHooks(skipTests, noHooks bool) []*release.Hook {
	if noHooks {
		return nil
	}
	var hooks []*release.Hook
	for _, h := range r.ReleaseHooks {
		if !skipTests || !slices.Contains(h.Events, release.HookTest) {
			hooks = append(hooks, h)
		}
	}
	return hooks
}

var templateSource = regexp.MustCompile("# Source: [^/]+/(.+)")

// selectTemplates keeps the documents rendered from the given templates, as helm template's
// --show-only does.
func selectTemplates(manifests string, showOnly []string) (string, error) {
	split := releaseutil.SplitManifests(manifests)
	keys := make([]string, 0, len(split))
	for k := range split {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var out strings.Builder
	for _, f := range showOnly {
		f = filepath.ToSlash(f)
		found := false
		for _, k := range keys {
			m := split[k]
			sub := templateSource.FindStringSubmatch(m)
			if len(sub) == 0 {
				continue
			}
			if ok, _ := filepath.Match(f, sub[1]); !ok {
				continue
			}
			fmt.Fprintf(&out, "---\n%s\n", m)
			found = true
		}
		if !found {
			return "", fmt.Errorf("could not find template %s in chart", f)
		}
	}
	return out.String(), nil
}
