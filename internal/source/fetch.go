package source

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/berthdev/berth/internal/par"
	"github.com/berthdev/berth/internal/version"
)

// FetchOptions bound what fetching a chart may take: time at each step of a request, bytes of
// each response, and what is kept between fetches.
type FetchOptions struct {
	// DialTimeout bounds opening a TCP connection.
	DialTimeout time.Duration
	// TLSHandshakeTimeout bounds the TLS handshake.
	TLSHandshakeTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for a response's headers once the request is sent:
	// a server that takes the connection and never answers.
	ResponseHeaderTimeout time.Duration
	// RequestTimeout bounds one request as a whole, its body included: a server that answers
	// a byte at a time. The fetch's context bounds the fetch as a whole when it has a deadline.
	RequestTimeout time.Duration
	// MaxIndexBytes is the largest repository index (or OCI tag list) taken.
	MaxIndexBytes int64
	// MaxChartBytes is the largest packaged chart taken.
	MaxChartBytes int64
	// MaxContentBytes is the most a chart taken may expand to once decompressed, the archives
	// of its subcharts added up (chart.Check), checked before Helm's loader reads it; 0 is
	// chart.DefaultContentLimit.
	MaxContentBytes int64
	// IndexTTL is how long a repository index whose server gives neither ETag nor
	// Last-Modified, or an OCI repository's tag list, is used before it is fetched again.
	// Indexes that have a validator are revalidated at each fetch, with a conditional request.
	IndexTTL time.Duration
	// IndexCacheBytes bounds the indexes kept in memory (by the size of their files); the
	// least recently used go first.
	IndexCacheBytes int64
	// ChartCacheBytes, when positive, bounds the charts kept in the content cache; the least
	// recently used go first. 0 keeps them all, as Helm does in its own cache.
	ChartCacheBytes int64
	// UserAgent is the User-Agent of every request.
	UserAgent string
	// MinRate, when positive, is the fewest bytes a second a response's body may come at: a
	// window of RateWindow (the first one a grace) that gives fewer ends the transfer with a
	// SlowTransferError. 0 allows any rate (within RequestTimeout).
	MinRate int64
	// RateWindow is the window MinRate is measured over; 0 means DefaultRateWindow.
	RateWindow time.Duration
	// ManyTenants is for a process that fetches for many tenants (the controller): registries
	// get only the credentials a fetch is given (Options' username and password), never those
	// stored in the registry config file or Docker's; and a chart of a repository's index is
	// taken from the content cache only by a fetch of the same URL with the same credentials as
	// one that downloaded it in this process (else it is downloaded again and checked against
	// the index's digest), so that an index naming the digest of another tenant's private chart
	// does not get it from the cache.
	ManyTenants bool
	// Now is the clock of the caches; nil is time.Now.
	Now func() time.Time
}

// DefaultFetchOptions are the bounds of a fetch unless told otherwise.
func DefaultFetchOptions() FetchOptions {
	return FetchOptions{
		DialTimeout:           10 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		RequestTimeout:        2 * time.Minute,
		MaxIndexBytes:         64 << 20,
		MaxChartBytes:         32 << 20,
		IndexTTL:              time.Minute,
		IndexCacheBytes:       256 << 20,
		UserAgent:             "berth/" + version.Version,
	}
}

// Bounds of a process that fetches for many tenants (the controller), where a tenant names the
// repository. Helm's index loader converts an index from YAML to JSON before it decodes it, and
// allocates some 20 to 40 times the index's size on the way (an index of 8 MiB, some 300 MiB):
// the largest index such a process takes is smaller than the CLI's, its indexes are parsed one at
// a time, and those kept in memory are bounded by a smaller size of their files.
const (
	ManyTenantsMaxIndexBytes   = 4 << 20
	ManyTenantsIndexCacheBytes = 32 << 20
)

// DefaultRateWindow is the window a minimum rate is measured over, and the grace of a transfer
// that starts slowly.
const DefaultRateWindow = 10 * time.Second

// maxProvenanceBytes bounds a provenance file, a signed copy of Chart.yaml and a digest.
const maxProvenanceBytes = 1 << 20

// maxManifestBytes bounds an OCI manifest (the OCI distribution spec's recommended limit).
const maxManifestBytes = 4 << 20

// Fetcher fetches charts with bounded requests: every request goes through one transport whose
// connections serve the next fetch, with dial, TLS handshake and response header timeouts, under
// the fetch's context (its deadline and cancellation) and RequestTimeout, and each response is
// read up to its size limit. It keeps repository indexes (revalidated with conditional
// requests) and OCI tag lists in memory, and charts by digest in the content cache, so that a
// fetch of what was fetched before downloads nothing. One Fetcher serves any number of
// concurrent fetches; a process that fetches again and again (the controller) keeps one.
type Fetcher struct {
	opts      FetchOptions
	transport *http.Transport

	indexes *indexCache
	tags    *tagCache
	// parsing lets one index be parsed at a time, as a parse allocates many times its size.
	parsing *par.Slots
	// indexFlights and chartFlights let concurrent fetches of one index or chart share one
	// download.
	indexFlights flights[*indexEntry]
	chartFlights flights[string]

	mu     sync.Mutex
	charts map[string]*chartCache
	// auths are the registries' token caches, by the credentials they were granted to.
	auths map[string]auth.Cache
	// granted are the charts of repositories downloaded by this process, by cache, chart,
	// URL and credentials (grantKey), with ManyTenants.
	granted map[string]struct{}
}

// maxGrants bounds Fetcher.granted; beyond, it starts again empty (the next fetch of each
// chart downloads it once more).
const maxGrants = 1 << 14

// grantKey names the download of the chart of cache key from chartURL (a repository's chart
// URL, or an OCI repository's oci://HOST/PATH) with a's credentials and TLS settings. Each part
// is prefixed by its length, so that no two different sets of parts (a username that holds
// what a separator would be, say) give the same name.
func grantKey(root string, key [sha256.Size]byte, chartURL string, a repoAccess) string {
	var b strings.Builder
	for _, s := range []string{root, fmt.Sprintf("%x", key), chartURL, a.key()} {
		fmt.Fprintf(&b, "%d:%s", len(s), s)
	}
	return b.String()
}

// mayReuse reports whether a fetch of grant may take the chart from the content cache.
func (f *Fetcher) mayReuse(grant string) bool {
	if !f.opts.ManyTenants {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.granted[grant]
	return ok
}

// grant records that grant downloaded its chart.
func (f *Fetcher) grant(grant string) {
	if !f.opts.ManyTenants {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.granted) >= maxGrants {
		clear(f.granted)
	}
	f.granted[grant] = struct{}{}
}

// NewFetcher returns a fetcher with the bounds of o; zero fields are DefaultFetchOptions'.
func NewFetcher(o FetchOptions) *Fetcher {
	o = o.withDefaults()
	return &Fetcher{
		opts:      o,
		transport: newTransport(o),
		indexes:   newIndexCache(o.IndexCacheBytes),
		tags:      newTagCache(),
		charts:    map[string]*chartCache{},
		parsing:   par.NewSlots(1),
		auths:     map[string]auth.Cache{},
		granted:   map[string]struct{}{},
	}
}

func (o FetchOptions) withDefaults() FetchOptions {
	d := DefaultFetchOptions()
	set := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&o.DialTimeout, d.DialTimeout)
	set(&o.TLSHandshakeTimeout, d.TLSHandshakeTimeout)
	set(&o.ResponseHeaderTimeout, d.ResponseHeaderTimeout)
	set(&o.RequestTimeout, d.RequestTimeout)
	set(&o.IndexTTL, d.IndexTTL)
	set(&o.RateWindow, DefaultRateWindow)
	if o.MaxIndexBytes <= 0 {
		o.MaxIndexBytes = d.MaxIndexBytes
	}
	if o.MaxChartBytes <= 0 {
		o.MaxChartBytes = d.MaxChartBytes
	}
	if o.IndexCacheBytes <= 0 {
		o.IndexCacheBytes = d.IndexCacheBytes
	}
	if o.UserAgent == "" {
		o.UserAgent = d.UserAgent
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// newTransport is the transport of o's timeouts. Compression is off, as in Helm's getter:
// archives are compressed already, and a server that says so again would have them unpacked.
func newTransport(o FetchOptions) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = o.TLSHandshakeTimeout
	t.ResponseHeaderTimeout = o.ResponseHeaderTimeout
	t.DisableCompression = true
	return t
}

// transportFor is the transport of a fetch with the TLS settings of opts: the shared one when
// opts have none, else one of the fetch's own with the same timeouts, whose connections done
// closes.
func (f *Fetcher) transportFor(opts RegistryOptions) (t *http.Transport, done func(), err error) {
	if !opts.hasTLS() {
		return f.transport, func() {}, nil
	}
	conf, err := tlsConfig(opts)
	if err != nil {
		return nil, nil, err
	}
	t = f.transport.Clone()
	t.TLSClientConfig = conf
	return t, t.CloseIdleConnections, nil
}

// tlsKey tells apart the TLS settings of opts, for keys of what a fetch shares with others.
func tlsKey(opts RegistryOptions) string {
	d := sha256.New()
	for _, b := range [][]byte{opts.Data.CA, opts.Data.Cert, opts.Data.Key} {
		fmt.Fprintf(d, "%d:", len(b))
		d.Write(b)
	}
	return fmt.Sprintf("%s|%s|%s|%t|%x", opts.CertFile, opts.KeyFile, opts.CAFile, opts.InsecureSkipTLSVerify, d.Sum(nil))
}

// deadlineKey is the context key of what a context's deadline bounds (a deadline).
type deadlineKey struct{}

// deadline is what a context's deadline bounds, for the TimeoutError of its end: the fetch
// (StepFetch) unless said otherwise, and the time it was given.
type deadline struct {
	step  TimeoutStep
	after time.Duration
}

// withBudget records in ctx that its deadline, if it has one, is the fetch's, and the time
// left before it.
func withBudget(ctx context.Context) context.Context {
	if dl, ok := ctx.Deadline(); ok {
		return context.WithValue(ctx, deadlineKey{}, deadline{step: StepFetch, after: time.Until(dl).Round(time.Millisecond)})
	}
	return ctx
}

// timeoutOf returns err as a TimeoutError of the request to host (URL u) when it is a timeout,
// and nil when it is not. ctx is the fetch's context: when its deadline has passed, that is what
// ran out, whatever step the request was at (a request's context, derived from it, may see the
// deadline first).
func (f *Fetcher) timeoutOf(ctx context.Context, err error, host, u string) *TimeoutError {
	var te *TimeoutError
	if errors.As(err, &te) {
		return te
	}
	if te := pluginTimeout(err, host, u); te != nil {
		return te
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		d, ok := ctx.Value(deadlineKey{}).(deadline)
		if !ok {
			d.step = StepFetch
		}
		return &TimeoutError{Host: host, URL: u, Step: d.step, After: d.after, Err: err}
	}
	var (
		netErr net.Error
		op     *net.OpError
		msg    = err.Error()
		o      = f.opts
	)
	switch {
	case !errors.As(err, &netErr) || !netErr.Timeout():
		return nil
	case strings.Contains(msg, "TLS handshake timeout"):
		return &TimeoutError{Host: host, URL: u, Step: StepTLSHandshake, After: o.TLSHandshakeTimeout, Err: err}
	case strings.Contains(msg, "timeout awaiting response headers"):
		return &TimeoutError{Host: host, URL: u, Step: StepResponseHeaders, After: o.ResponseHeaderTimeout, Err: err}
	case errors.As(err, &op) && op.Op == "dial":
		return &TimeoutError{Host: host, URL: u, Step: StepConnect, After: o.DialTimeout, Err: err}
	default:
		return &TimeoutError{Host: host, URL: u, Step: StepRequest, After: o.RequestTimeout, Err: err}
	}
}

// requestError is err of a request to host (URL u) in a fetch of context ctx: a TimeoutError
// when it is a timeout, err as it is otherwise.
func (f *Fetcher) requestError(ctx context.Context, err error, host, u string) error {
	if te := f.timeoutOf(ctx, err, host, u); te != nil {
		return te
	}
	return err
}

// detach runs fn, a call of Helm's that takes no context, in a goroutine of its own, and
// returns its result; when ctx ends first, it returns ctx's error at once and fn's result,
// whenever it comes, is dropped. The requests fn makes go through a transport bound to ctx
// (boundTransport) or under RequestTimeout, so an abandoned fn ends soon after: detach only
// makes sure the caller never waits on a call that lost its context.
func detach[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// flights lets concurrent callers of one key share one call (one request): the first starts
// it, the others wait for its result. The call runs under a context of its own (the first
// caller's values, none of its cancellation, RequestTimeout at most) so that a caller that
// leaves (its deadline came) does not fail the others; when the last caller leaves, the call is
// canceled.
type flights[T any] struct {
	mu sync.Mutex
	m  map[string]*flight[T]
}

type flight[T any] struct {
	done    chan struct{}
	v       T
	err     error
	waiters int
	cancel  context.CancelFunc
}

// do returns fn's result for key, calling fn with a context bounded by timeout unless a call of
// key is under way, whose result it returns then. When ctx ends first, it returns ctx's error.
func (g *flights[T]) do(ctx context.Context, key string, timeout time.Duration, fn func(context.Context) (T, error)) (T, error) {
	g.mu.Lock()
	if g.m == nil {
		g.m = map[string]*flight[T]{}
	}
	fl, ok := g.m[key]
	if !ok {
		callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		callCtx = context.WithValue(callCtx, deadlineKey{}, deadline{step: StepRequest, after: timeout})
		fl = &flight[T]{done: make(chan struct{}), cancel: cancel}
		g.m[key] = fl
		go func() {
			defer cancel()
			fl.v, fl.err = fn(callCtx)
			g.mu.Lock()
			g.forget(key, fl)
			g.mu.Unlock()
			close(fl.done)
		}()
	}
	fl.waiters++
	g.mu.Unlock()

	select {
	case <-fl.done:
		return fl.v, fl.err
	case <-ctx.Done():
		g.mu.Lock()
		fl.waiters--
		if fl.waiters == 0 {
			// Nobody waits: the call ends, and the next caller starts another.
			fl.cancel()
			g.forget(key, fl)
		}
		g.mu.Unlock()
		var zero T
		return zero, ctx.Err()
	}
}

// forget removes fl from the calls under way, if it is still key's; g.mu is held.
func (g *flights[T]) forget(key string, fl *flight[T]) {
	if g.m[key] == fl {
		delete(g.m, key)
	}
}

// hostOf is the HOST[:PORT] of URL u, or u when it has none.
func hostOf(u string) string {
	rest, ok := strings.CutPrefix(u, "oci://")
	if !ok {
		_, rest, ok = strings.Cut(u, "://")
		if !ok {
			return u
		}
	}
	host, _, _ := strings.Cut(rest, "/")
	return host
}
