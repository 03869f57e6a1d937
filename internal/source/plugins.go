package source

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	helmcli "helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/registry"

	"github.com/berthdev/berth/internal/plugins"
)

// NoGetterError is a reference whose URL scheme neither Helm nor an installed getter plugin
// serves.
type NoGetterError struct {
	Scheme string
	// PluginsDir is where plugins were looked for (HELM_PLUGINS).
	PluginsDir string
}

func (e *NoGetterError) Error() string {
	return fmt.Sprintf("no getter plugin in %s serves the scheme %q", e.PluginsDir, e.Scheme)
}

// builtinSchemes are the schemes Helm's own getters serve.
var builtinSchemes = []string{"http", "https", registry.OCIScheme}

// schemeOf is the URL scheme of ref, or "" when ref is no URL.
func schemeOf(ref string) string {
	if !strings.Contains(ref, "://") {
		return ""
	}
	u, err := url.Parse(ref)
	if err != nil {
		return ""
	}
	return u.Scheme
}

// checkScheme checks that a getter serves the scheme of ref, a URL: Helm's own, or that of an
// installed getter plugin.
func checkScheme(settings *helmcli.EnvSettings, ref string) error {
	scheme := schemeOf(ref)
	if scheme == "" || slices.Contains(builtinSchemes, scheme) {
		return nil
	}
	found, err := plugins.Find(settings.PluginsDirectory, plugins.TypeGetter)
	if err != nil {
		return err
	}
	for _, p := range found.Plugins {
		if slices.Contains(p.Protocols, scheme) {
			return nil
		}
	}
	return &NoGetterError{Scheme: scheme, PluginsDir: settings.PluginsDirectory}
}

// pluginProviders are the getters of the getter plugins installed where settings say
// (HELM_PLUGINS). A subprocess plugin is run by berth under ctx, its processes killed when ctx
// ends or after timeout, and may write maxBytes at most. A plugin of another runtime
// (WebAssembly, extism/v1) only Helm's SDK runs: it gets Helm's own getter, which takes no
// context, so that a fetch through it is abandoned rather than stopped when ctx ends.
func pluginProviders(ctx context.Context, settings *helmcli.EnvSettings, timeout time.Duration, maxBytes int64) getter.Providers {
	found, err := plugins.Find(settings.PluginsDirectory, plugins.TypeGetter)
	if err != nil {
		return nil
	}
	own, skipped := plugins.Getters(ctx, found.Plugins, plugins.GetterOptions{Env: settings.EnvVars(), Timeout: timeout, MaxBytes: maxBytes})
	if len(skipped) == 0 {
		return own
	}
	var others []string
	for _, p := range skipped {
		others = append(others, p.Protocols...)
	}
	for _, p := range getter.All(settings)[len(getter.Getters()):] {
		if slices.ContainsFunc(p.Schemes, func(s string) bool { return slices.Contains(others, s) }) {
			own = append(own, p)
		}
	}
	return own
}

// maxPluginBytes is the most a getter plugin may write: an index or a chart.
func (f *Fetcher) maxPluginBytes() int64 {
	return max(f.opts.MaxIndexBytes, f.opts.MaxChartBytes)
}

// TLSConfig is the TLS configuration of opts' client certificate, CA file and verification,
// for a download of berth's other than a chart's (a plugin's).
func TLSConfig(opts RegistryOptions) (*tls.Config, error) { return tlsConfig(opts) }
