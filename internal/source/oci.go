package source

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	helmcli "helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/downloader"
	"helm.sh/helm/v4/pkg/registry"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
)

// registryClient returns Helm's registry client for one fetch under ctx, with opts and the
// user's stored credentials. Helm's client passes no context to its requests (tag listing,
// manifest and blob fetches use context.Background()); its HTTP client here puts each request
// under ctx, so that the fetch's deadline and cancellation reach them, and under the fetcher's
// timeouts and size limits. Its requests share the fetcher's connections and, for the same
// credentials, its registry tokens. done releases what the client opened of its own.
func (f *Fetcher) registryClient(ctx context.Context, settings *helmcli.EnvSettings, host string, opts RegistryOptions, out io.Writer) (*registrySession, func(), error) {
	base, done, err := f.transportFor(opts)
	if err != nil {
		return nil, nil, err
	}
	hc := &http.Client{Transport: &boundTransport{ctx: ctx, base: base, f: f}}
	cred, id := registryCredential(settings, host, opts, f.opts.ManyTenants)
	authorizer := auth.Client{
		Client: hc, Credential: cred, Cache: f.authCache(id),
		Header: http.Header{"User-Agent": {f.opts.UserAgent}},
	}
	clientOpts := []registry.ClientOption{
		registry.ClientOptWriter(out),
		registry.ClientOptCredentialsFile(settings.RegistryConfig),
		registry.ClientOptHTTPClient(hc),
		registry.ClientOptAuthorizer(authorizer),
	}
	if opts.PlainHTTP {
		clientOpts = append(clientOpts, registry.ClientOptPlainHTTP())
	}
	rc, err := registry.NewClient(clientOpts...)
	if err != nil {
		done()
		return nil, nil, fmt.Errorf("registry client: %w", err)
	}
	return &registrySession{Client: rc, authorizer: authorizer, plainHTTP: opts.PlainHTTP}, done, nil
}

// registrySession is one fetch's way to a registry: Helm's registry client, and the authorizer
// and scheme that an oras repository of the same registry is reached with, for what Helm's
// client does not do (signatures).
type registrySession struct {
	*registry.Client
	authorizer auth.Client
	plainHTTP  bool
}

// repository is the repository name (HOST/PATH) reached through s: its requests bounded and
// authorized as those of Helm's client, sharing its tokens.
func (s *registrySession) repository(name string) (*remote.Repository, error) {
	repo, err := remote.NewRepository(name)
	if err != nil {
		return nil, err
	}
	repo.Client = &s.authorizer
	repo.PlainHTTP = s.plainHTTP
	return repo, nil
}

// registryCredential is how Helm's registry client finds credentials: opts' username and
// password when both are given, for the registry host only, else (unless onlyGiven) the
// registry config file with Docker's as fallback. id tells the credentials apart, for the token
// cache.
func registryCredential(settings *helmcli.EnvSettings, host string, opts RegistryOptions, onlyGiven bool) (auth.CredentialFunc, string) {
	if opts.Username != "" && opts.Password != "" {
		cred := auth.Credential{Username: opts.Username, Password: opts.Password}
		return func(_ context.Context, h string) (auth.Credential, error) {
			if h != host {
				return auth.EmptyCredential, nil
			}
			return cred, nil
		}, basicID(opts)
	}
	if onlyGiven {
		return func(context.Context, string) (auth.Credential, error) { return auth.EmptyCredential, nil }, "anonymous"
	}
	storeOpts := credentials.StoreOptions{AllowPlaintextPut: true, DetectDefaultNativeStore: true}
	id := "stored\x00" + settings.RegistryConfig
	store, err := credentials.NewStore(settings.RegistryConfig, storeOpts)
	if err != nil {
		// Helm's client would not start; here the registry says what it asks for.
		return func(context.Context, string) (auth.Credential, error) { return auth.EmptyCredential, nil }, id
	}
	var s credentials.Store = store
	if docker, err := credentials.NewStoreFromDocker(storeOpts); err == nil {
		s = credentials.NewStoreWithFallbacks(store, docker)
	}
	return credentials.Credential(s), id
}

// registryAccess is the access of a fetch from a registry with opts, for grantKey: its
// credentials and TLS settings.
func registryAccess(opts RegistryOptions) repoAccess {
	return repoAccess{Username: opts.Username, Password: opts.Password, TLS: opts}
}

// registryURL names the repository name (HOST/PATH) of a registry reached with opts, for
// grantKey: plain HTTP or TLS.
func registryURL(name string, opts RegistryOptions) string {
	if opts.PlainHTTP {
		return "oci+http://" + name
	}
	return "oci://" + name
}

// basicID tells apart the username and password of opts, without the password.
func basicID(opts RegistryOptions) string {
	sum := sha256.Sum256([]byte(opts.Password))
	return "basic\x00" + opts.Username + "\x00" + hex.EncodeToString(sum[:])
}

// authCache is the registry token cache of the credentials id.
func (f *Fetcher) authCache(id string) auth.Cache {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.auths[id]
	if !ok {
		c = auth.NewCache()
		f.auths[id] = c
	}
	return c
}

// boundTransport carries the requests of one fetch's registry client: each under the fetch's
// context (its deadline and cancellation) as well as its own, and RequestTimeout, with its
// response's body read up to the limit of what it is (a chart layer, a manifest, a tag list).
type boundTransport struct {
	ctx  context.Context
	base http.RoundTripper
	f    *Fetcher
}

func (t *boundTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.f.checkCredentials(req, req.Header.Get("Authorization") != "", req.Response != nil); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.f.opts.RequestTimeout)
	release := cancel
	if dl, ok := t.ctx.Deadline(); ok {
		var cancelDeadline context.CancelFunc
		ctx, cancelDeadline = context.WithDeadline(ctx, dl)
		release = func() { cancelDeadline(); cancel() }
	}
	stop := context.AfterFunc(t.ctx, cancel)
	end := func() {
		stop()
		release()
	}
	u := req.URL.Redacted()
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		end()
		return nil, t.f.requestError(t.ctx, err, req.URL.Host, u)
	}
	t.f.watchRate(resp, req.URL.Host, u)
	limit, what := t.f.limitOf(req.URL.Path)
	if resp.ContentLength > limit {
		resp.Body.Close()
		end()
		return nil, &TooLargeError{What: what, URL: u, Limit: limit}
	}
	resp.Body = &boundBody{body: resp.Body, limit: limit, left: limit, what: what, url: u, host: req.URL.Host, ctx: t.ctx, f: t.f, end: end}
	return resp, nil
}

// limitOf is the size limit of the response to a registry request for path, and what it is.
func (f *Fetcher) limitOf(path string) (int64, string) {
	switch {
	case strings.Contains(path, "/blobs/"):
		return f.opts.MaxChartBytes, "blob"
	case strings.HasSuffix(path, "/tags/list"):
		return f.opts.MaxIndexBytes, "tag list"
	default:
		return maxManifestBytes, "manifest"
	}
}

// boundBody is a response body read up to limit bytes, whose errors say what timed out.
type boundBody struct {
	body        io.ReadCloser
	limit, left int64
	what, url   string
	host        string
	ctx         context.Context
	f           *Fetcher
	end         func()
	once        sync.Once
}

func (b *boundBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// All the limit allows was read: one byte more is too much.
		var one [1]byte
		n, err := b.body.Read(one[:])
		if n > 0 {
			return 0, &TooLargeError{What: b.what, URL: b.url, Limit: b.limit}
		}
		return 0, b.err(err)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.body.Read(p)
	b.left -= int64(n)
	return n, b.err(err)
}

// err is a read's err, a TimeoutError when it is a timeout.
func (b *boundBody) err(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return err
	}
	return b.f.requestError(b.ctx, err, b.host, b.url)
}

func (b *boundBody) Close() error {
	err := b.body.Close()
	b.once.Do(b.end)
	return err
}

// registryChart returns the chart ref names at version from its OCI registry: its path in
// cache, the content cache, and the files this fetch put there. Helm's registry client resolves
// the version as Helm does (an OCI repository's tag list, cached for IndexTTL, for a range or
// the latest); the tag's manifest digest, from a HEAD request, is the chart's key in cache, so
// that fetching again a tag that did not move downloads nothing. Helm's calls run detached
// (detach): a registry that does not answer fails the fetch when ctx ends.
func (r *Resolver) registryChart(ctx context.Context, f *Fetcher, ref, version string, k *verifier) (string, []string, error) {
	rc, done, err := f.registryClient(ctx, r.Settings, OCIHost(ref), r.registryOptions(), r.out())
	if err != nil {
		return "", nil, err
	}
	defer done()
	cache := f.chartCache(r.Settings.ContentCache)
	type result struct {
		path    string
		created []string
	}
	res, err := detach(ctx, func() (result, error) {
		path, created, err := r.pullChart(ctx, f, rc, cache, ref, version, k)
		return result{path, created}, err
	})
	if err != nil {
		return "", res.created, f.requestError(ctx, err, OCIHost(ref), ref)
	}
	return res.path, res.created, nil
}

// pullChart is registryChart's work, with Helm's registry client rc.
func (r *Resolver) pullChart(ctx context.Context, f *Fetcher, rc *registrySession, cache *chartCache, ref, version string, k *verifier) (string, []string, error) {
	name, tag, digest := ociParts(ref)
	check := version
	if digest == "" && tag == "" && !isVersion(version) {
		// Tag lists are kept by the credentials (and TLS settings) that listed them: another
		// fetch lists them again with its own.
		opts := r.registryOptions()
		key := name + "\x00" + basicID(opts) + "\x00" + tlsKey(opts)
		tags, err := f.tags.get(key, f.opts.Now(), f.opts.IndexTTL, func() ([]string, error) { return rc.Tags(name) })
		if err != nil {
			return "", nil, err
		}
		if len(tags) == 0 {
			return "", nil, fmt.Errorf("unable to locate any tags in provided repository: %s", ref)
		}
		if check, err = registry.GetTagMatchingVersionOrConstraint(tags, version); err != nil {
			return "", nil, err
		}
	}
	// Helm's own checks of the reference and version (a digest and its version's, say).
	u, err := url.Parse(ref)
	if err != nil {
		return "", nil, err
	}
	if _, _, err := rc.ValidateReference(ref, check, u); err != nil {
		return "", nil, err
	}
	if digest == "" {
		if tag == "" {
			tag = check
		}
		desc, err := rc.Resolve(name + ":" + tag)
		if err != nil {
			return "", nil, err
		}
		digest = desc.Digest.String()
	} else if _, err := rc.Resolve(name + "@" + digest); err != nil {
		// A chart pinned by digest may be in the content cache, put there by a fetch with
		// other credentials: the registry says whether these may read it.
		return "", nil, err
	}
	key, err := cacheKey(strings.TrimPrefix(digest, "sha256:"), ref)
	if err != nil {
		return "", nil, err
	}
	pinned := name + "@" + digest
	// A registry's HEAD answer is only a claim: a registry of anyone's may name the digest of
	// another tenant's private chart. The chart comes from the content cache only for a fetch of
	// the same repository with the same credentials as one that pulled it whole (grantKey);
	// any other pulls it from its own registry, which must serve the content of that digest.
	grant := grantKey(cache.root, key, registryURL(name, r.registryOptions()), registryAccess(r.registryOptions()))
	var created []string
	path, err := cache.Get(key, downloader.CacheChart)
	if err != nil || !f.mayReuse(grant) {
		cached := err == nil
		res, err := rc.Pull(pinned, registry.PullOptWithChart(true))
		if err != nil {
			return "", nil, &NotServedError{Host: OCIHost(ref), Ref: ref, Digest: digest, Err: err}
		}
		if res.Manifest == nil || res.Manifest.Digest != digest {
			got := ""
			if res.Manifest != nil {
				got = res.Manifest.Digest
			}
			return "", nil, &NotServedError{Host: OCIHost(ref), Ref: ref, Digest: digest, Err: fmt.Errorf("it served manifest %q: %w", got, content.ErrMismatchedDigest)}
		}
		if path, err = cache.Put(key, bytes.NewReader(res.Chart.Data), downloader.CacheChart); err != nil {
			return "", nil, err
		}
		if !cached {
			created = append(created, path)
		}
		f.grant(grant)
	}
	if k.signatures() {
		return path, created, r.verifySignatures(ctx, rc, k, ref, name, digest)
	}
	if !k.pgp() {
		return path, created, nil
	}
	prov, err := cache.Get(key, downloader.CacheProv)
	if err != nil {
		res, err := rc.Pull(pinned, registry.PullOptWithChart(false), registry.PullOptWithProv(true))
		if err != nil {
			if _, ours := fetchKind(err); ours {
				return "", created, fmt.Errorf("failed to fetch provenance %q: %w", ref+".prov", err)
			}
			return "", created, &ProvenanceError{Err: fmt.Errorf("failed to fetch provenance %q", ref+".prov"), Missing: true}
		}
		if prov, err = cache.Put(key, bytes.NewReader(res.Prov.Data), downloader.CacheProv); err != nil {
			return "", created, err
		}
		created = append(created, prov)
	}
	return path, created, k.verify(path, prov)
}

// ociParts splits the oci:// reference ref into its repository (HOST/PATH), tag and digest.
func ociParts(ref string) (name, tag, digest string) {
	name = strings.TrimPrefix(ref, registry.OCIScheme+"://")
	if i := strings.LastIndex(name, "@"); i >= 0 {
		name, digest = name[:i], name[i+1:]
	}
	if i := strings.LastIndex(name, ":"); i >= 0 && !strings.Contains(name[i:], "/") {
		name, tag = name[:i], name[i+1:]
	}
	return name, tag, digest
}

// isVersion reports whether Helm takes version as a tag rather than a range: a version it
// parses.
func isVersion(version string) bool {
	_, err := semver.NewVersion(version)
	return version != "" && err == nil
}

// tagCache holds the tag lists of OCI repositories (by repository and user), each for a while.
type tagCache struct {
	mu sync.Mutex
	m  map[string]tagList
}

type tagList struct {
	tags    []string
	fetched time.Time
}

// maxTagLists bounds the tag lists kept; beyond, the expired ones go.
const maxTagLists = 4096

func newTagCache() *tagCache { return &tagCache{m: map[string]tagList{}} }

// get returns the tags of repository name: those listed within ttl before now, else those
// list returns.
func (c *tagCache) get(name string, now time.Time, ttl time.Duration, list func() ([]string, error)) ([]string, error) {
	c.mu.Lock()
	l, ok := c.m[name]
	c.mu.Unlock()
	if ok && now.Sub(l.fetched) < ttl {
		return l.tags, nil
	}
	tags, err := list()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxTagLists {
		for k, l := range c.m {
			if now.Sub(l.fetched) >= ttl {
				delete(c.m, k)
			}
		}
	}
	c.m[name] = tagList{tags: tags, fetched: now}
	return tags, nil
}
