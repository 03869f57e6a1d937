package source_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	helmcli "helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/provenance"
	"helm.sh/helm/v4/pkg/repo/v1"

	"github.com/berthdev/berth/internal/source"
	"github.com/berthdev/berth/internal/testnet"
	"github.com/berthdev/berth/test/berthtest"
)

// settingsIn are Helm settings whose files and caches are under a directory of the test's.
func settingsIn(t *testing.T) *helmcli.EnvSettings {
	t.Helper()
	dir := t.TempDir()
	s := helmcli.New()
	s.RepositoryConfig = filepath.Join(dir, "repositories.yaml")
	s.RepositoryCache = filepath.Join(dir, "repository")
	s.ContentCache = filepath.Join(dir, "content")
	s.RegistryConfig = filepath.Join(dir, "registry", "config.json")
	return s
}

// fetchFrom locates the chart web at version in the repository at repoURL (oci:// references
// are given whole as repoURL, with no chart name), through f, and returns the path and error.
func fetchFrom(ctx context.Context, settings *helmcli.EnvSettings, f *source.Fetcher, repoURL, version string, opt ...func(*source.Options)) (string, error) {
	var opts source.Options
	opts.Version = version
	ref := repoURL
	if !strings.HasPrefix(repoURL, "oci://") {
		opts.RepoURL, ref = repoURL, "web"
	}
	for _, o := range opt {
		o(&opts)
	}
	r := &source.Resolver{Settings: settings, Options: opts, Fetcher: f}
	return r.Locate(ctx, ref)
}

// hungServer is a chart repository that takes each request and never answers it; arrived
// receives one value per request. Its requests end when the client goes or the test ends.
func hungServer(t *testing.T) (srv *httptest.Server, arrived <-chan struct{}) {
	t.Helper()
	stop := make(chan struct{})
	got := make(chan struct{}, 64)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // first: the handlers return, then the server closes
	return srv, got
}

// tricklingServer is a chart repository that answers every request at once with 200 and then
// one byte of its body a second.
func tricklingServer(t *testing.T) *httptest.Server {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for _, b := range []byte("apiVersion: v1\nentries: {}\n") {
			w.Write([]byte{b})
			w.(http.Flusher).Flush()
			select {
			case <-tick.C:
			case <-r.Context().Done():
				return
			case <-stop:
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) })
	return srv
}

// patient are fetch options whose own timeouts never end a test's fetch: only the test's
// context or the option a test shortens does.
func patient() source.FetchOptions {
	o := source.DefaultFetchOptions()
	o.DialTimeout, o.TLSHandshakeTimeout, o.ResponseHeaderTimeout, o.RequestTimeout = time.Hour, time.Hour, time.Hour, time.Hour
	return o
}

// wantTimeout checks that err is a source.Error of KindTimeout whose TimeoutError names host
// and step.
func wantTimeout(t *testing.T, err error, host string, step source.TimeoutStep) {
	t.Helper()
	var srcErr *source.Error
	var timeout *source.TimeoutError
	if !errors.As(err, &srcErr) || srcErr.Kind != source.KindTimeout || !errors.As(err, &timeout) {
		t.Fatalf("got %v, want a source.Error of kind %q with a TimeoutError", err, source.KindTimeout)
	}
	if timeout.Host != host || timeout.Step != step {
		t.Errorf("timeout of host %q at %q, want %q at %q (%v)", timeout.Host, timeout.Step, host, step, err)
	}
	if !strings.Contains(err.Error(), host) || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("error %q does not name host %s and say it timed out", err, host)
	}
}

// TestFetchFromSilentServersTimesOut: a Helm repository that takes the request and never answers,
// one that answers a byte a second, and an OCI registry that takes the connection and says
// nothing: each fetch fails when its context's deadline (a Release's timeout) comes, or when a
// step of the request takes longer than the fetcher allows, with a TimeoutError naming the host.
func TestFetchFromSilentServersTimesOut(t *testing.T) {
	hung, _ := hungServer(t)
	trickling := tricklingServer(t)
	silent, _ := testnet.SilentListener(t)
	plainHTTP := func(o *source.Options) { o.PlainHTTP = true }
	tests := []struct {
		name     string
		repoURL  string
		deadline time.Duration // of the fetch's context, when set
		opts     func(*source.FetchOptions)
		optsOf   []func(*source.Options)
		host     string
		step     source.TimeoutStep
	}{
		{name: "hung repository, the fetch's deadline", repoURL: hung.URL, deadline: 200 * time.Millisecond,
			host: hostOf(hung.URL), step: source.StepFetch},
		{name: "hung repository, response header timeout", repoURL: hung.URL,
			opts: func(o *source.FetchOptions) { o.ResponseHeaderTimeout = 100 * time.Millisecond },
			host: hostOf(hung.URL), step: source.StepResponseHeaders},
		{name: "a byte a second, the fetch's deadline", repoURL: trickling.URL, deadline: 1500 * time.Millisecond,
			host: hostOf(trickling.URL), step: source.StepFetch},
		{name: "a byte a second, request timeout", repoURL: trickling.URL,
			opts: func(o *source.FetchOptions) { o.RequestTimeout = 1500 * time.Millisecond },
			host: hostOf(trickling.URL), step: source.StepRequest},
		{name: "silent registry, the fetch's deadline", repoURL: "oci://" + silent + "/charts/web", deadline: 200 * time.Millisecond,
			optsOf: []func(*source.Options){plainHTTP}, host: silent, step: source.StepFetch},
		{name: "silent registry, response header timeout", repoURL: "oci://" + silent + "/charts/web",
			opts:   func(o *source.FetchOptions) { o.ResponseHeaderTimeout = 100 * time.Millisecond },
			optsOf: []func(*source.Options){plainHTTP}, host: silent, step: source.StepResponseHeaders},
		{name: "silent registry, TLS handshake timeout", repoURL: "oci://" + silent + "/charts/web",
			opts: func(o *source.FetchOptions) { o.TLSHandshakeTimeout = 100 * time.Millisecond },
			host: silent, step: source.StepTLSHandshake},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := patient()
			if tt.opts != nil {
				tt.opts(&o)
			}
			ctx := t.Context()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			_, err := fetchFrom(ctx, settingsIn(t), source.NewFetcher(o), tt.repoURL, "0.1.0", tt.optsOf...)
			wantTimeout(t, err, tt.host, tt.step)
		})
	}
}

// TestFetchFromSilentServersIsCanceled: a fetch from a server that does not answer returns when
// its context is canceled, with an error that says so, whatever the fetcher's own timeouts.
func TestFetchFromSilentServersIsCanceled(t *testing.T) {
	hung, hungArrived := hungServer(t)
	silent, silentArrived := testnet.SilentListener(t)
	tests := []struct {
		name    string
		repoURL string
		arrived <-chan struct{}
		optsOf  []func(*source.Options)
	}{
		{name: "hung repository", repoURL: hung.URL, arrived: hungArrived},
		{name: "silent registry", repoURL: "oci://" + silent + "/charts/web", arrived: silentArrived,
			optsOf: []func(*source.Options){func(o *source.Options) { o.PlainHTTP = true }}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := fetchFrom(ctx, settingsIn(t), source.NewFetcher(patient()), tt.repoURL, "0.1.0", tt.optsOf...)
				done <- err
			}()
			<-tt.arrived
			cancel()
			err := <-done
			var srcErr *source.Error
			if !errors.Is(err, context.Canceled) || !errors.As(err, &srcErr) || srcErr.Kind != source.KindCanceled {
				t.Fatalf("got %v, want a source.Error of kind %q that is context.Canceled", err, source.KindCanceled)
			}
		})
	}
}

// countingRepo is a Helm chart repository of the chart web 0.1.0 that counts the requests it
// serves: of its index, answered 304 Not Modified, and of the archive.
type countingRepo struct {
	URL string
	// validator is how the index is served: "etag", "last-modified" (long ago),
	// "just-modified" (Last-Modified of the second it is served in) or "".
	validator string

	mu                                   sync.Mutex
	index, notModified, archive, ifMatch int
	indexData, archiveData               []byte
}

func newCountingRepo(t *testing.T, validator string, chartFiles map[string]string) *countingRepo {
	t.Helper()
	r := &countingRepo{validator: validator}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	archive := berthtest.PackageNewChart(t, "web", "0.1.0", chartFiles)
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	r.archiveData = data
	ch, err := loader.Load(archive)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := provenance.DigestFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	idx := repo.NewIndexFile()
	if err := idx.MustAdd(ch.Metadata, "web-0.1.0.tgz", srv.URL, digest); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "index.yaml")
	if err := idx.WriteFile(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if r.indexData, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	return r
}

// lastModified is when the index was last modified, for "last-modified".
var lastModified = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func (r *countingRepo) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch req.URL.Path {
	case "/index.yaml":
		r.index++
		switch r.validator {
		case "etag":
			w.Header().Set("ETag", `"index-1"`)
			if req.Header.Get("If-None-Match") != "" {
				r.ifMatch++
			}
			if req.Header.Get("If-None-Match") == `"index-1"` {
				r.notModified++
				w.WriteHeader(http.StatusNotModified)
				return
			}
		case "just-modified":
			now := time.Now().UTC().Format(http.TimeFormat)
			w.Header().Set("Last-Modified", now)
			w.Header().Set("Date", now)
			if req.Header.Get("If-Modified-Since") != "" {
				r.ifMatch++
			}
		case "last-modified":
			w.Header().Set("Last-Modified", lastModified.Format(http.TimeFormat))
			if since, err := http.ParseTime(req.Header.Get("If-Modified-Since")); err == nil {
				r.ifMatch++
				if !lastModified.After(since) {
					r.notModified++
					w.WriteHeader(http.StatusNotModified)
					return
				}
			}
		}
		w.Write(r.indexData)
	case "/web-0.1.0.tgz":
		r.archive++
		w.Write(r.archiveData)
	default:
		http.NotFound(w, req)
	}
}

// counts returns the requests served: of the index, of those answered 304, of those
// conditional, and of the archive.
func (r *countingRepo) counts() (index, notModified, conditional, archive int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.index, r.notModified, r.ifMatch, r.archive
}

// TestSecondFetchDownloadsNothing: a second fetch of the same chart from a repository whose
// index has a validator asks whether the index changed (a conditional request, answered 304)
// and takes the chart from the cache: nothing is downloaded.
func TestSecondFetchDownloadsNothing(t *testing.T) {
	for _, validator := range []string{"etag", "last-modified"} {
		t.Run(validator, func(t *testing.T) {
			r := newCountingRepo(t, validator, nil)
			f := source.NewFetcher(source.DefaultFetchOptions())
			settings := settingsIn(t)
			first, err := fetchFrom(t.Context(), settings, f, r.URL, "0.1.0")
			if err != nil {
				t.Fatal(err)
			}
			second, err := fetchFrom(t.Context(), settings, f, r.URL, "0.1.0")
			if err != nil {
				t.Fatal(err)
			}
			if first != second {
				t.Errorf("second fetch at %s, first at %s", second, first)
			}
			index, notModified, conditional, archive := r.counts()
			if index != 2 || conditional != 1 || notModified != 1 || archive != 1 {
				t.Errorf("server saw %d index requests (%d conditional, %d answered 304) and %d archive requests, want 2 (1, 1) and 1",
					index, conditional, notModified, archive)
			}
		})
	}
}

// TestIndexJustModifiedIsFetchedAgain: an index whose Last-Modified is the second it was served
// in may change again within that second without its Last-Modified changing: the next fetch
// downloads it again rather than ask whether it changed since.
func TestIndexJustModifiedIsFetchedAgain(t *testing.T) {
	r := newCountingRepo(t, "just-modified", nil)
	f := source.NewFetcher(source.DefaultFetchOptions())
	settings := settingsIn(t)
	for i := range 2 {
		if _, err := fetchFrom(t.Context(), settings, f, r.URL, "0.1.0"); err != nil {
			t.Fatalf("fetch %d: %v", i+1, err)
		}
	}
	if index, _, conditional, archive := r.counts(); index != 2 || conditional != 0 || archive != 1 {
		t.Errorf("server saw %d index requests (%d conditional) and %d archive requests, want 2 (0) and 1", index, conditional, archive)
	}
}

// TestIndexWithoutValidatorIsKeptForItsTTL: an index its server gives no validator for is used
// again without a request for IndexTTL, then fetched again.
func TestIndexWithoutValidatorIsKeptForItsTTL(t *testing.T) {
	r := newCountingRepo(t, "", nil)
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	o := source.DefaultFetchOptions()
	o.IndexTTL = time.Minute
	o.Now = func() time.Time { return now }
	f := source.NewFetcher(o)
	settings := settingsIn(t)
	for i, step := range []time.Duration{0, 30 * time.Second, 31 * time.Second} {
		now = now.Add(step)
		if _, err := fetchFrom(t.Context(), settings, f, r.URL, "0.1.0"); err != nil {
			t.Fatalf("fetch %d: %v", i+1, err)
		}
	}
	if index, _, _, archive := r.counts(); index != 2 || archive != 1 {
		t.Errorf("server saw %d index and %d archive requests, want 2 (the first, and once the TTL passed) and 1", index, archive)
	}
}

// TestFetchSizeLimits: an index or a chart larger than the fetcher takes fails the fetch with
// a TooLargeError that says which.
func TestFetchSizeLimits(t *testing.T) {
	r := newCountingRepo(t, "", nil)
	tests := []struct {
		name string
		opts func(*source.FetchOptions)
		what string
	}{
		{"index", func(o *source.FetchOptions) { o.MaxIndexBytes = int64(len(r.indexData)) - 1 }, "repository index"},
		{"chart", func(o *source.FetchOptions) { o.MaxChartBytes = int64(len(r.archiveData)) - 1 }, "chart"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := source.DefaultFetchOptions()
			tt.opts(&o)
			_, err := fetchFrom(t.Context(), settingsIn(t), source.NewFetcher(o), r.URL, "0.1.0")
			var srcErr *source.Error
			var large *source.TooLargeError
			if !errors.As(err, &srcErr) || srcErr.Kind != source.KindTooLarge || !errors.As(err, &large) || large.What != tt.what {
				t.Fatalf("got %v, want a source.Error of kind %q with a TooLargeError of the %s", err, source.KindTooLarge, tt.what)
			}
		})
	}
}

// TestChartCacheLimit: with ChartCacheBytes, the charts least recently used leave the cache to
// keep it under the limit, and are downloaded again when asked for.
func TestChartCacheLimit(t *testing.T) {
	small := newCountingRepo(t, "etag", nil)
	other := newCountingRepo(t, "etag", map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n"})
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	o := source.DefaultFetchOptions()
	o.ChartCacheBytes = int64(max(len(small.archiveData), len(other.archiveData))) + 1
	o.Now = func() time.Time { return now }
	f := source.NewFetcher(o)
	settings := settingsIn(t)
	first, err := fetchFrom(t.Context(), settings, f, small.URL, "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour) // beyond the grace a chart just used has
	if _, err := fetchFrom(t.Context(), settings, f, other.URL, "0.1.0"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(first); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the chart least recently used is still in the cache, over its limit: %v", err)
	}
	now = now.Add(time.Hour) // within the grace, the cache would refuse it rather than outgrow its limit
	if _, err := fetchFrom(t.Context(), settings, f, small.URL, "0.1.0"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, archive := small.counts(); archive != 2 {
		t.Errorf("the chart that left the cache was downloaded %d times, want 2", archive)
	}
}

// TestRegistrySecondFetchDownloadsNothing: fetching again a chart of an OCI registry whose tag
// did not move asks for the tag's manifest digest (HEAD) and downloads no manifest or blob.
func TestRegistrySecondFetchDownloadsNothing(t *testing.T) {
	berthtest.IsolateHelmFiles(t)
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{PlainHTTP: true})
	settings := helmcli.New()
	push(t, settings, webChart(t, "0.1.0"), reg.Ref("charts"), source.RegistryOptions{PlainHTTP: true})

	var mu sync.Mutex
	var gets []string
	target, err := url.Parse("http://" + reg.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			mu.Lock()
			gets = append(gets, r.URL.Path)
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	ref := "oci://" + hostOf(front.URL) + "/charts/web"

	f := source.NewFetcher(source.DefaultFetchOptions())
	plainHTTP := func(o *source.Options) { o.PlainHTTP = true }
	for _, version := range []string{"0.1.0", "^0.1"} {
		t.Run(version, func(t *testing.T) {
			local := settingsIn(t)
			if _, err := fetchFrom(t.Context(), local, f, ref, version, plainHTTP); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			gets = nil
			mu.Unlock()
			path, err := fetchFrom(t.Context(), local, f, ref, version, plainHTTP)
			if err != nil {
				t.Fatal(err)
			}
			if ch, err := loader.Load(path); err != nil || ch.Metadata.Version != "0.1.0" {
				t.Fatalf("second fetch: %v, chart %v", err, ch)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(gets) != 0 {
				t.Errorf("the second fetch downloaded %s", strings.Join(gets, ", "))
			}
		})
	}
}

// hostOf is the HOST:PORT of a server's URL.
func hostOf(serverURL string) string {
	u, err := url.Parse(serverURL)
	if err != nil {
		panic(fmt.Sprintf("server URL %q: %v", serverURL, err))
	}
	return u.Host
}
