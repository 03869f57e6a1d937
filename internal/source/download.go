package source

import (
	"io"
	"net/url"
	"os"
	"path/filepath"

	"helm.sh/helm/v4/pkg/downloader"
	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/registry"
	"helm.sh/helm/v4/pkg/repo/v1"
)

// sharesTransport reports whether r fetches through its Transport: it has one, and its options
// ask for no TLS settings of their own (a shared transport has one TLS configuration).
func (r *Resolver) sharesTransport() bool {
	o := r.Options
	return r.Transport != nil && o.CertFile == "" && o.KeyFile == "" && o.CaFile == "" && !o.InsecureSkipTLSVerify
}

// download fetches the chart ref names, not on disk, into Helm's caches as Helm's LocateChart
// does: the same downloader, index lookup, verification, TLS and credential rules. When r shares
// its Transport, every request to a chart repository goes through it, and its connections
// outlive the fetch and serve the next one; LocateChart makes transports of its own for each
// fetch, which it never closes.
func (r *Resolver) download(ref, version string) (string, error) {
	o := r.Options
	var shared []getter.Option
	if r.sharesTransport() {
		shared = append(shared, getter.WithTransport(r.Transport))
	}
	getters := getter.All(r.Settings, shared...)
	out := r.Out
	if out == nil {
		out = io.Discard
	}
	dl := downloader.ChartDownloader{
		Out:     out,
		Keyring: o.Keyring,
		Getters: getters,
		Options: []getter.Option{
			getter.WithPassCredentialsAll(o.PassCredentialsAll),
			getter.WithTLSClientConfig(o.CertFile, o.KeyFile, o.CaFile),
			getter.WithInsecureSkipVerifyTLS(o.InsecureSkipTLSVerify),
			getter.WithPlainHTTP(o.PlainHTTP),
		},
		RepositoryConfig: r.Settings.RepositoryConfig,
		RepositoryCache:  r.Settings.RepositoryCache,
		ContentCache:     r.Settings.ContentCache,
		RegistryClient:   r.Registry,
	}
	if registry.IsOCI(ref) {
		dl.Options = append(dl.Options, getter.WithRegistryClient(r.Registry))
	}
	if o.Verify {
		dl.Verify = downloader.VerifyAlways
	}
	username, password := o.Username, o.Password
	if o.RepoURL != "" {
		chartURL, err := repo.FindChartInRepoURL(o.RepoURL, ref, getters,
			repo.WithChartVersion(version),
			repo.WithClientTLS(o.CertFile, o.KeyFile, o.CaFile),
			repo.WithUsernamePassword(o.Username, o.Password),
			repo.WithInsecureSkipTLSVerify(o.InsecureSkipTLSVerify),
			repo.WithPassCredentialsAll(o.PassCredentialsAll))
		if err != nil {
			return "", err
		}
		// As Helm: the repository's credentials go with the chart's download only when asked to
		// or when the chart is where the repository is (scheme, host and port).
		if !o.PassCredentialsAll && !sameServer(o.RepoURL, chartURL) {
			username, password = "", ""
		}
		ref = chartURL
	}
	dl.Options = append(dl.Options, getter.WithBasicAuth(username, password))
	if err := os.MkdirAll(r.Settings.RepositoryCache, 0o755); err != nil {
		return "", err
	}
	file, _, err := dl.DownloadToCache(ref, version)
	if err != nil {
		return "", err
	}
	return filepath.Abs(file)
}

// sameServer reports whether URLs a and b have one scheme, host and port.
func sameServer(a, b string) bool {
	u1, err1 := url.Parse(a)
	u2, err2 := url.Parse(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return u1.Scheme == u2.Scheme && u1.Hostname() == u2.Hostname() && portOf(u1) == portOf(u2)
}

// portOf is u's port, or its scheme's when it names none.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch u.Scheme {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}
