package source

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	helmcli "helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/repo/v1"
)

// tlsRoutes are the TLS settings of a fetch's connections: those byHost has for a connection's
// HOST:PORT, def for the others.
type tlsRoutes struct {
	def    RegistryOptions
	byHost map[string]RegistryOptions
}

// withEntries adds to routes the TLS settings of the repositories of repositories.yaml that
// have some, by the host of their URL, as Helm gives a repository's requests its own. Where two
// repositories of one host have some, the first's are taken.
func (routes tlsRoutes) withEntries(settings *helmcli.EnvSettings) tlsRoutes {
	f, err := repo.LoadFile(settings.RepositoryConfig)
	if err != nil {
		return routes
	}
	for _, e := range f.Repositories {
		opts := entryTLS(e)
		addr := hostPort(e.URL)
		if !opts.hasTLS() || addr == "" {
			continue
		}
		if routes.byHost == nil {
			routes.byHost = map[string]RegistryOptions{}
		}
		if _, ok := routes.byHost[addr]; !ok {
			routes.byHost[addr] = opts
		}
	}
	return routes
}

// entryTLS is the TLS settings of the repository e.
func entryTLS(e *repo.Entry) RegistryOptions {
	return RegistryOptions{CertFile: e.CertFile, KeyFile: e.KeyFile, CAFile: e.CAFile, InsecureSkipTLSVerify: e.InsecureSkipTLSVerify}
}

// hostPort is the HOST:PORT URL u's connections go to, or "" when u has no host.
func hostPort(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return ""
	}
	return net.JoinHostPort(p.Hostname(), portOf(p))
}

// fetchGetters are Helm's getters of one fetch, for Helm's calls that take no context (its
// repository, downloader and dependency manager). Helm's getter takes an *http.Transport and
// ignores its own TLS settings when given one: the one it is given here hands every request to
// a router of the fetch (getterTransport), which sends it through the fetcher's transport (its
// dial, TLS handshake and response header timeouts, and connections that serve the next fetch),
// or one of its own with the TLS settings of the request's host (tlsRoutes), under the fetch's
// context as well as the request's, each response read up to its size limit. Each request is
// bounded by timeout.
type fetchGetters struct {
	ctx       context.Context
	f         *Fetcher
	transport *http.Transport
	timeout   time.Duration
	done      []func()

	mu sync.Mutex
	// timedOut is the first request of the fetch that timed out.
	timedOut *TimeoutError
	// last is the URL of the request started last.
	last string
}

// getters returns the getters of one fetch within ctx, each request bounded by timeout
// (RequestTimeout when 0). close releases them.
func (f *Fetcher) getters(ctx context.Context, timeout time.Duration, routes tlsRoutes) (*fetchGetters, error) {
	if timeout <= 0 {
		timeout = f.opts.RequestTimeout
	}
	g := &fetchGetters{ctx: ctx, f: f, timeout: timeout}
	rt := &getterTransport{g: g, byHost: map[string]route{}}
	base, done, err := f.transportFor(routes.def)
	if err != nil {
		return nil, err
	}
	rt.def = route{base: base}
	g.done = append(g.done, done)
	for addr, opts := range routes.byHost {
		// A repository whose TLS settings do not load fails its own requests, not the fetch.
		base, done, err := f.transportFor(opts)
		if err == nil {
			g.done = append(g.done, done)
		}
		rt.byHost[addr] = route{base: base, err: err}
	}
	// The transport Helm's getter is given only hands requests to rt: with no TLSNextProto of
	// its own, it sets up no HTTP/2 of its own either.
	g.transport = &http.Transport{TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	g.transport.RegisterProtocol("http", rt)
	g.transport.RegisterProtocol("https", rt)
	return g, nil
}

// providers are Helm's getters with the fetch's transport and bounds, and those of the getter
// plugins installed, under the fetch's context (pluginProviders).
// Those of http and https say which request of the fetch timed out.
func (g *fetchGetters) providers(settings *helmcli.EnvSettings) getter.Providers {
	all := getter.Getters(getter.WithTransport(g.transport), getter.WithTimeout(g.timeout), getter.WithUserAgent(g.f.opts.UserAgent))
	all = append(all, pluginProviders(g.ctx, settings, g.timeout, g.f.maxPluginBytes())...)
	for i, p := range all {
		if !p.Provides("https") {
			continue
		}
		newGetter := p.New
		all[i].New = func(options ...getter.Option) (getter.Getter, error) {
			inner, err := newGetter(options...)
			if err != nil {
				return nil, err
			}
			return &boundGetter{inner: inner, g: g}, nil
		}
	}
	return all
}

// close releases the connections the fetch opened of its own.
func (g *fetchGetters) close() {
	for _, done := range g.done {
		done()
	}
}

// route is where a request of a fetch goes: a transport, or why there is none.
type route struct {
	base *http.Transport
	err  error
}

// getterTransport carries the requests of one fetch's getters, each through the route of its
// host, under the fetch's context as well as its own.
type getterTransport struct {
	g      *fetchGetters
	def    route
	byHost map[string]route
}

func (t *getterTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r, ok := t.byHost[hostPort(req.URL.String())]
	if !ok {
		r = t.def
	}
	if r.err != nil {
		return nil, r.err
	}
	if err := t.g.f.checkCredentials(req, req.Header.Get("Authorization") != "", req.Response != nil); err != nil {
		return nil, err
	}
	f, fetchCtx := t.g.f, t.g.ctx
	ctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(fetchCtx, cancel)
	end := func() {
		stop()
		cancel()
	}
	u := req.URL.Redacted()
	resp, err := r.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		end()
		return nil, f.requestError(fetchCtx, err, req.URL.Host, u)
	}
	f.watchRate(resp, req.URL.Host, u)
	limit, what := f.getterLimit(req.URL.Path)
	if resp.ContentLength > limit {
		resp.Body.Close()
		end()
		return nil, &TooLargeError{What: what, URL: u, Limit: limit}
	}
	resp.Body = &boundBody{body: resp.Body, limit: limit, left: limit, what: what, url: u, host: req.URL.Host, ctx: fetchCtx, f: f, end: end}
	return resp, nil
}

// getterLimit is the size limit of the response to a getter's request for path, and what it
// is.
func (f *Fetcher) getterLimit(path string) (int64, string) {
	switch {
	case strings.HasSuffix(path, "/index.yaml") || path == "index.yaml":
		return f.opts.MaxIndexBytes, "repository index"
	case strings.HasSuffix(path, ".prov"):
		return maxProvenanceBytes, "provenance file"
	default:
		return f.opts.MaxChartBytes, "chart"
	}
}

// failed is err of the request of href: a TimeoutError, which the fetch remembers, when it is
// a timeout, err as it is otherwise.
func (g *fetchGetters) failed(err error, href string) error {
	var te *TimeoutError
	if !errors.As(err, &te) {
		u := redact(href)
		if te = g.f.timeoutOf(g.ctx, err, hostOf(u), u); te == nil {
			return err
		}
		if te.Step == StepRequest {
			// The getter's timeout bounded the request, not RequestTimeout.
			te.After = g.timeout
		}
		err = te
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.timedOut == nil {
		g.timedOut = te
	}
	return err
}

// fail is err of the fetch from host (URL u): a TimeoutError when the fetch's deadline came,
// context.Canceled when it was canceled, else err, joined with the TimeoutError of a request
// that timed out before (Helm reports some failed requests only as a message and goes on, to
// fail later for want of what they would have fetched). Without a host (a fetch from many),
// the host is that of the request started last.
func (g *fetchGetters) fail(err error, host, u string) error {
	if err == nil {
		return nil
	}
	if host == "" {
		g.mu.Lock()
		u = g.last
		g.mu.Unlock()
		host = hostOf(u)
	}
	if te := g.f.timeoutOf(g.ctx, err, host, redact(u)); te != nil {
		return te
	}
	if cerr := g.ctx.Err(); cerr != nil {
		if host == "" {
			return cerr
		}
		return fmt.Errorf("fetch from %s: %w", host, cerr)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.timedOut != nil {
		return errors.Join(g.timedOut, err)
	}
	return err
}

// redact is u without its password, if it has one.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Redacted()
}

// boundGetter is Helm's getter of a fetch, whose failed requests say when they timed out.
type boundGetter struct {
	inner getter.Getter
	g     *fetchGetters
}

func (b *boundGetter) Get(href string, options ...getter.Option) (*bytes.Buffer, error) {
	if err := b.g.ctx.Err(); err != nil {
		return nil, b.g.fail(err, hostOf(redact(href)), href)
	}
	b.g.mu.Lock()
	b.g.last = redact(href)
	b.g.mu.Unlock()
	buf, err := b.inner.Get(href, options...)
	if err != nil {
		return nil, b.g.failed(err, href)
	}
	return buf, nil
}
