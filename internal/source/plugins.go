package source

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	helmcli "helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/registry"
	"helm.sh/helm/v4/pkg/repo/v1"

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

// pluginScheme reports whether u is a URL of a scheme Helm's own getters do not serve, that
// only a getter plugin may.
func pluginScheme(u string) bool {
	s := schemeOf(u)
	return s != "" && !slices.Contains(builtinSchemes, s)
}

// pluginRepositoryChart fetches chart name from the repository Options.RepoURL, whose scheme
// a getter plugin serves, as Helm's LocateChart does: its index read with Helm's
// FindChartInRepoURL, then the chart's URL downloaded (helmDownload), with the credentials
// only when the chart is on the repository's server or PassCredentialsAll says so. Helm's
// index lookup takes no context: it runs detached, the plugin bound to ctx.
func (r *Resolver) pluginRepositoryChart(ctx context.Context, f *Fetcher, name, version string, k *verifier) (string, error) {
	o := r.Options
	timeout := f.opts.RequestTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	getters := append(getter.Getters(getter.WithTimeout(timeout)), pluginProviders(ctx, r.Settings, timeout, f.maxPluginBytes())...)
	chartURL, err := detach(ctx, func() (string, error) {
		return repo.FindChartInRepoURL(o.RepoURL, name, getters,
			repo.WithChartVersion(version),
			repo.WithClientTLS(o.CertFile, o.KeyFile, o.CaFile),
			repo.WithUsernamePassword(o.Username, o.Password),
			repo.WithInsecureSkipTLSVerify(o.InsecureSkipTLSVerify),
			repo.WithPassCredentialsAll(o.PassCredentialsAll))
	})
	if err != nil {
		return "", f.requestError(ctx, err, hostOf(o.RepoURL), o.RepoURL)
	}
	chartOf := *r
	chartOf.Options.RepoURL = ""
	if !o.PassCredentialsAll && !sameServer(o.RepoURL, chartURL) {
		chartOf.Options.Username, chartOf.Options.Password = "", ""
	}
	return chartOf.helmDownload(ctx, f, chartURL, version, k)
}

// pluginTimeout is the TimeoutError of a getter plugin that did not end within the time it
// was given, naming it, or nil when err is not one.
func pluginTimeout(err error, host, u string) *TimeoutError {
	var ge *plugins.GetterError
	if !errors.As(err, &ge) || ge.Timeout <= 0 {
		return nil
	}
	return &TimeoutError{Host: host, URL: ge.URL, Step: TimeoutStep("getter plugin " + ge.Plugin), After: ge.Timeout, Err: err}
}
