package source

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v4/pkg/downloader"
	"helm.sh/helm/v4/pkg/repo/v1"

	"github.com/berthdev/berth/internal/yamlbound"
)

// repoAccess is how a fetch reaches a chart repository: its credentials and TLS settings.
type repoAccess struct {
	Username, Password string
	// PassCredentialsAll sends the credentials to the chart's server too when it is not the
	// repository's.
	PassCredentialsAll bool
	// TLS holds the client certificate, CA and verification settings (its other fields are not
	// used).
	TLS RegistryOptions
}

// key tells apart what a fetch with a gets from what another does: an index served to some
// credentials is not served to others.
func (a repoAccess) key() string {
	pw := sha256.Sum256([]byte(a.Password))
	return fmt.Sprintf("%d:%s\x00%s\x00%s", len(a.Username), a.Username, hex.EncodeToString(pw[:]), tlsKey(a.TLS))
}

// indexEntry is a repository index as fetched, with what revalidates it.
type indexEntry struct {
	index              *repo.IndexFile
	etag, lastModified string
	// checked is when it was last downloaded or revalidated.
	checked time.Time
	// size is the size of the index file.
	size int64
}

// validated reports whether the server gave a validator for a conditional request.
func (e *indexEntry) validated() bool { return e.etag != "" || e.lastModified != "" }

// repositoryChart returns the chart name at version in the chart repository at repoURL, checked
// against k's keyring when it has one: its path in cache, the content cache, and the files this
// fetch put there. The index comes from memory when its server answers a conditional request
// with 304 Not Modified (or, when it gives no validator, within IndexTTL); the chart comes from
// cache when it holds the digest the index gives, so that fetching again what did not change
// downloads nothing.
func (f *Fetcher) repositoryChart(ctx context.Context, cache *chartCache, repoURL, name, version string, a repoAccess, k *verifier) (string, []string, error) {
	idx, asked, err := f.index(ctx, repoURL, a, false)
	if err == nil && !asked && !has(idx, name, version) {
		// The index in memory, within IndexTTL, may predate the chart: ask the server.
		idx, _, err = f.index(ctx, repoURL, a, true)
	}
	if _, ours := fetchKind(err); err != nil && !ours {
		return "", nil, fmt.Errorf("looks like %q is not a valid chart repository or cannot be reached: %w", repoURL, err)
	}
	if err != nil {
		return "", nil, err // a timeout, a size or a cancellation: it says what happened
	}
	what := fmt.Sprintf("chart %q", name)
	if version != "" {
		what = fmt.Sprintf("%s version %q", what, version)
	}
	cv, err := idx.Get(name, version)
	if err != nil {
		return "", nil, repo.ChartNotFoundError{Chart: what, RepoURL: repoURL}
	}
	if len(cv.URLs) == 0 {
		return "", nil, fmt.Errorf("%s has no downloadable URLs", what)
	}
	chartURL, err := repo.ResolveReferenceURL(repoURL, cv.URLs[0])
	if err != nil {
		return "", nil, fmt.Errorf("failed to make chart URL absolute: %w", err)
	}
	// As Helm: the repository's credentials go with the chart's download only when asked to
	// or when the chart is where the repository is (scheme, host and port).
	if !a.PassCredentialsAll && !sameServer(repoURL, chartURL) {
		a.Username, a.Password = "", ""
	}
	digest := strings.TrimPrefix(cv.Digest, "sha256:")
	key, err := cacheKey(digest, chartURL)
	if err != nil {
		return "", nil, err
	}
	path, created, err := f.archive(ctx, cache, key, chartURL, digest, a)
	if err != nil || !k.pgp() {
		return path, created, err
	}
	prov, put, err := f.provenance(ctx, cache, key, chartURL, a)
	created = append(created, put...)
	if err != nil {
		return "", created, err
	}
	return path, created, k.verify(path, prov)
}

// has reports whether idx has chart name at version.
func has(idx *repo.IndexFile, name, version string) bool {
	_, err := idx.Get(name, version)
	return err == nil
}

// index returns the index of the repository at repoURL, from memory or downloaded; asked says
// whether the server was asked, which it always is with fresh.
func (f *Fetcher) index(ctx context.Context, repoURL string, a repoAccess, fresh bool) (idx *repo.IndexFile, asked bool, err error) {
	indexURL, err := repo.ResolveReferenceURL(repoURL, "index.yaml")
	if err != nil {
		return nil, false, err
	}
	key := indexURL + "\x00" + a.key()
	cached := f.indexes.get(key)
	if !fresh && cached != nil && !cached.validated() && f.opts.Now().Sub(cached.checked) < f.opts.IndexTTL {
		return cached.index, false, nil
	}
	e, err := f.indexFlights.do(ctx, key, f.opts.RequestTimeout, func(ctx context.Context) (*indexEntry, error) {
		e, err := f.downloadIndex(ctx, indexURL, a, cached)
		if err == nil {
			f.indexes.put(key, e)
		}
		return e, err
	})
	if err != nil {
		return nil, true, f.requestError(ctx, err, hostOf(indexURL), indexURL)
	}
	return e.index, true, nil
}

// downloadIndex fetches the index at indexURL: with a conditional request when cached has a
// validator, whose 304 Not Modified keeps cached (checked again now).
func (f *Fetcher) downloadIndex(ctx context.Context, indexURL string, a repoAccess, cached *indexEntry) (*indexEntry, error) {
	header := http.Header{}
	if cached != nil {
		if cached.etag != "" {
			header.Set("If-None-Match", cached.etag)
		}
		if cached.lastModified != "" {
			header.Set("If-Modified-Since", cached.lastModified)
		}
	}
	resp, done, err := f.request(ctx, indexURL, a, header)
	if err != nil {
		return nil, err
	}
	defer done()
	if resp.StatusCode == http.StatusNotModified && cached != nil {
		e := *cached
		e.checked = f.opts.Now()
		return &e, nil
	}
	if err := statusError(resp, indexURL, a); err != nil {
		return nil, err
	}
	data, err := f.readBody(ctx, resp, f.opts.MaxIndexBytes, "repository index", indexURL)
	if err != nil {
		return nil, err
	}
	parsed, err := f.parsing.Acquire(ctx)
	if err != nil {
		return nil, ctx.Err()
	}
	idx, err := parseIndex(data, indexURL, f.yamlLimits())
	parsed()
	if err != nil {
		return nil, err
	}
	e := &indexEntry{index: idx, etag: resp.Header.Get("ETag"), checked: f.opts.Now(), size: int64(len(data))}
	if lm := resp.Header.Get("Last-Modified"); settled(lm, resp.Header.Get("Date"), e.checked) {
		e.lastModified = lm
	}
	if !e.validated() && resp.Header.Get("Last-Modified") != "" {
		// Changed within the second it was fetched in: another change in that second would
		// keep its Last-Modified; the next fetch downloads it again.
		e.checked = time.Time{}
	}
	return e, nil
}

// settled reports whether an index last modified at lastModified (an HTTP date, of one second's
// precision) had not changed for a second when the server answered (at date, or now when it
// gives none): only then does its Last-Modified tell its changes apart.
func settled(lastModified, date string, now time.Time) bool {
	lm, err := http.ParseTime(lastModified)
	if err != nil {
		return false
	}
	at := now
	if d, err := http.ParseTime(date); err == nil {
		at = d
	}
	return at.Sub(lm) >= time.Second
}

// archive returns the path in cache of the chart at chartURL, under key, and the files it put
// there: the cached file when there is one, else the one it downloads, checked against digest
// (hex SHA-256) when the index gives one.
func (f *Fetcher) archive(ctx context.Context, cache *chartCache, key [sha256.Size]byte, chartURL, digest string, a repoAccess) (string, []string, error) {
	grant := grantKey(cache.root, key, chartURL, a)
	if p, err := cache.Get(key, downloader.CacheChart); err == nil && f.mayReuse(grant) {
		return p, nil, nil
	}
	// One flight per URL as well: two repositories may list the same digest, and one that
	// answers slowly (or not at all) must not fail the fetches from the other.
	flightKey := cache.root + "\x00" + hex.EncodeToString(key[:]) + "\x00" + chartURL + "\x00" + a.key()
	path, err := f.chartFlights.do(ctx, flightKey, f.opts.RequestTimeout, func(ctx context.Context) (string, error) {
		// Streamed to disk, never held whole: a chart may be MaxChartBytes.
		tmp, sum, err := f.download(ctx, chartURL, a, f.opts.MaxChartBytes, "chart", cache.root)
		if err != nil {
			return "", err
		}
		defer func() {
			tmp.Close()
			os.Remove(tmp.Name())
		}()
		if digest != "" && sum != digest {
			return "", &DigestError{URL: chartURL, Want: "sha256:" + digest, Got: "sha256:" + sum}
		}
		p, err := cache.Put(key, tmp, downloader.CacheChart)
		if err == nil {
			f.grant(grant)
		}
		return p, err
	})
	if err != nil {
		return "", nil, f.requestError(ctx, err, hostOf(chartURL), chartURL)
	}
	return path, []string{path}, nil
}

// provenance returns the path in cache of the provenance file of the chart at chartURL (of
// cache key key), and the files it put there. Unlike the archive, which its digest names, a
// provenance file is whatever its server sends: it is cached under its URL and a's
// credentials too, so that one repository's (one tenant's) never answers a fetch from another.
func (f *Fetcher) provenance(ctx context.Context, cache *chartCache, key [sha256.Size]byte, chartURL string, a repoAccess) (string, []string, error) {
	provURL := chartURL + ".prov"
	key = sha256.Sum256([]byte(grantKey("provenance", key, provURL, a)))
	if p, err := cache.Get(key, downloader.CacheProv); err == nil {
		return p, nil, nil
	}
	data, err := f.get(ctx, provURL, a, maxProvenanceBytes, "provenance file")
	if err != nil {
		if _, ours := fetchKind(err); ours {
			return "", nil, fmt.Errorf("failed to fetch provenance %q: %w", provURL, err)
		}
		return "", nil, &ProvenanceError{Err: fmt.Errorf("failed to fetch provenance %q", provURL), Missing: true}
	}
	p, err := cache.Put(key, bytes.NewReader(data), downloader.CacheProv)
	if err != nil {
		return "", nil, err
	}
	return p, []string{p}, nil
}

// cacheKey is the content cache's key of a chart: its digest (hex SHA-256) when known, else
// the SHA-256 of its URL, which names its version.
func cacheKey(digest, chartURL string) ([sha256.Size]byte, error) {
	var key [sha256.Size]byte
	if digest == "" {
		return sha256.Sum256([]byte(chartURL)), nil
	}
	b, err := hex.DecodeString(digest)
	if err != nil || len(b) != sha256.Size {
		return key, fmt.Errorf("invalid digest %q of %s", digest, chartURL)
	}
	copy(key[:], b)
	return key, nil
}

// get downloads u whole, up to limit bytes (what names it in errors).
func (f *Fetcher) get(ctx context.Context, u string, a repoAccess, limit int64, what string) ([]byte, error) {
	resp, done, err := f.request(ctx, u, a, http.Header{"Accept": {"application/gzip,application/octet-stream"}})
	if err != nil {
		return nil, err
	}
	defer done()
	if err := statusError(resp, u, a); err != nil {
		return nil, err
	}
	return f.readBody(ctx, resp, limit, what, u)
}

// download streams u, up to limit bytes (what names it in errors), into a new file of dir, and
// returns it, open at its start, with the hex SHA-256 of its content; the caller closes and
// removes it.
func (f *Fetcher) download(ctx context.Context, u string, a repoAccess, limit int64, what, dir string) (*os.File, string, error) {
	resp, done, err := f.request(ctx, u, a, http.Header{"Accept": {"application/gzip,application/octet-stream"}})
	if err != nil {
		return nil, "", err
	}
	defer done()
	if err := statusError(resp, u, a); err != nil {
		return nil, "", err
	}
	if resp.ContentLength > limit {
		return nil, "", &TooLargeError{What: what, URL: u, Limit: limit}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	tmp, err := os.CreateTemp(dir, ".download-*")
	if err != nil {
		return nil, "", err
	}
	fail := func(err error) (*os.File, string, error) {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, "", err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, limit+1))
	switch {
	case err != nil:
		return fail(f.requestError(ctx, err, hostOf(u), u))
	case n > limit:
		return fail(&TooLargeError{What: what, URL: u, Limit: limit})
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return fail(err)
	}
	return tmp, hex.EncodeToString(h.Sum(nil)), nil
}

// request sends GET u with header under ctx, with a's credentials and TLS settings; done
// closes the response and what the request opened.
func (f *Fetcher) request(ctx context.Context, u string, a repoAccess, header http.Header) (*http.Response, func(), error) {
	t, closeTransport, err := f.transportFor(a.TLS)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, http.NoBody)
	if err != nil {
		closeTransport()
		return nil, nil, err
	}
	req.Header = header
	req.Header.Set("User-Agent", f.opts.UserAgent)
	if a.Username != "" && a.Password != "" {
		req.SetBasicAuth(a.Username, a.Password)
	}
	if err := f.checkCredentials(req, req.Header.Get("Authorization") != "", false); err != nil {
		closeTransport()
		return nil, nil, err
	}
	client := &http.Client{Transport: t, CheckRedirect: func(next *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		// Whether or not Go's client carries the credentials on (it does to the same host), a
		// request with credentials is never redirected to plain HTTP.
		return f.checkCredentials(next, via[0].Header.Get("Authorization") != "", true)
	}}
	resp, err := client.Do(req)
	if err != nil {
		var insecure *InsecureCredentialsError
		if errors.As(err, &insecure) {
			closeTransport()
			return nil, nil, insecure
		}
		closeTransport()
		if te := f.timeoutOf(ctx, err, hostOf(u), u); te != nil {
			return nil, nil, te
		}
		if KindOf(err) == KindTLS {
			return nil, nil, &TLSError{Host: hostOf(u), URL: u, Err: err}
		}
		return nil, nil, err
	}
	f.watchRate(resp, hostOf(u), u)
	return resp, func() {
		resp.Body.Close()
		closeTransport()
	}, nil
}

// checkCredentials refuses req, with ManyTenants, when it goes over plain HTTP with credentials
// (withCredentials: it, or the request redirected to it, has an Authorization header); redirect
// says it is a redirect's.
func (f *Fetcher) checkCredentials(req *http.Request, withCredentials, redirect bool) error {
	if !f.opts.ManyTenants || req.URL.Scheme != "http" || !withCredentials {
		return nil
	}
	return &InsecureCredentialsError{Host: req.URL.Host, URL: req.URL.Redacted(), Redirect: redirect}
}

// statusError is the error of a response to a request for u that is not 200 OK: an AuthError
// for 401 and 403.
func statusError(resp *http.Response, u string, a repoAccess) error {
	switch resp.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusUnauthorized, http.StatusForbidden:
		return &AuthError{Host: hostOf(u), URL: u, Status: resp.Status, WithCredentials: a.Username != "" && a.Password != ""}
	}
	return fmt.Errorf("failed to fetch %s : %s", u, resp.Status)
}

// readBody reads resp's body whole, up to limit bytes.
func (f *Fetcher) readBody(ctx context.Context, resp *http.Response, limit int64, what, u string) ([]byte, error) {
	if resp.ContentLength > limit {
		return nil, &TooLargeError{What: what, URL: u, Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, f.requestError(ctx, err, hostOf(u), u)
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{What: what, URL: u, Limit: limit}
	}
	return data, nil
}

// yamlLimits bounds what the YAML aliases of a document f fetches add once expanded.
func (f *Fetcher) yamlLimits() yamlbound.Limits {
	if f.opts.ManyTenants {
		return yamlbound.Tenant
	}
	return yamlbound.Local
}

// parseIndex loads a repository index as Helm does (entries checked and sorted), once what its
// YAML aliases add is within limits: Helm's loader converts it to JSON, expanding every alias.
// where names the index in errors.
func parseIndex(data []byte, where string, limits yamlbound.Limits) (*repo.IndexFile, error) {
	if err := yamlbound.Check(data, limits); err != nil {
		return nil, &ExpansionError{What: "repository index", Where: where, Err: err}
	}
	// Helm loads indexes from files only.
	tmp, err := os.CreateTemp("", "berth-index-*.yaml")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return repo.LoadIndexFile(tmp.Name())
}

// indexCache holds repository indexes in memory up to a total size of their files, the least
// recently used leaving first.
type indexCache struct {
	mu    sync.Mutex
	limit int64
	size  int64
	order *list.List // of *indexItem, the most recently used first
	items map[string]*list.Element
}

type indexItem struct {
	key   string
	entry *indexEntry
}

func newIndexCache(limit int64) *indexCache {
	return &indexCache{limit: limit, order: list.New(), items: map[string]*list.Element{}}
}

func (c *indexCache) get(key string) *indexEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*indexItem).entry
}

// put keeps e under key, and drops the least recently used others while the cache is over its
// limit.
func (c *indexCache) put(key string, e *indexEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.size -= el.Value.(*indexItem).entry.size
		c.order.Remove(el)
	}
	c.items[key] = c.order.PushFront(&indexItem{key: key, entry: e})
	c.size += e.size
	for c.size > c.limit && c.order.Len() > 1 {
		last := c.order.Back()
		item := last.Value.(*indexItem)
		c.order.Remove(last)
		delete(c.items, item.key)
		c.size -= item.entry.size
	}
}
