package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"helm.sh/helm/v4/pkg/downloader"
	"helm.sh/helm/v4/pkg/getter"
	helmprov "helm.sh/helm/v4/pkg/provenance"
	"helm.sh/helm/v4/pkg/registry"
	"helm.sh/helm/v4/pkg/repo/v1"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/provenance"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/yamlbound"
)

// download fetches the chart ref names, not on disk, into the content cache, and returns its
// path and the files the fetch put into the cache. Every fetch goes through r's Fetcher, within
// ctx (its deadline and cancellation): a chart of an OCI registry, or of the repository given by
// URL (--repo, the controller's), by berth's own bounded requests and caches around Helm's
// registry client and index lookup; REPO/CHART of the user's repositories and a chart's URL by
// Helm's downloader, as Helm's LocateChart does, detached and bounded (helmDownload).
func (r *Resolver) download(ctx context.Context, ref, version string, k *verifier) (string, []string, error) {
	ctx = withBudget(ctx)
	f := r.fetcher()
	switch {
	case registry.IsOCI(ref):
		return r.registryChart(ctx, f, ref, version, k)
	case r.Options.RepoURL != "" && pluginScheme(r.Options.RepoURL):
		path, err := r.pluginRepositoryChart(ctx, f, ref, version, k)
		return path, nil, err
	case r.Options.RepoURL != "":
		return r.repositoryChart(ctx, f, ref, version, k)
	default:
		path, err := r.helmDownload(ctx, f, ref, version, k)
		return path, nil, err
	}
}

// fetcher is r's Fetcher, or one of DefaultFetchOptions when it has none.
func (r *Resolver) fetcher() *Fetcher {
	if r.Fetcher != nil {
		return r.Fetcher
	}
	return NewFetcher(DefaultFetchOptions())
}

// yamlLimits bounds what the YAML aliases of a chart r loads add once expanded: its Fetcher's.
func (r *Resolver) yamlLimits() yamlbound.Limits {
	if r.Fetcher != nil {
		return r.Fetcher.yamlLimits()
	}
	return yamlbound.Local
}

// out is where Helm's messages go.
func (r *Resolver) out() io.Writer {
	if r.Out == nil {
		return io.Discard
	}
	return r.Out
}

// repositoryChart fetches the chart ref names from the repository Options.RepoURL, with the
// credentials and TLS settings of Options, and verifies it with k when it is not nil.
func (r *Resolver) repositoryChart(ctx context.Context, f *Fetcher, ref, version string, k *verifier) (string, []string, error) {
	o := r.Options
	a := repoAccess{
		Username: o.Username, Password: o.Password, PassCredentialsAll: o.PassCredentialsAll,
		TLS: RegistryOptions{CertFile: o.CertFile, KeyFile: o.KeyFile, CAFile: o.CaFile, InsecureSkipTLSVerify: o.InsecureSkipTLSVerify, Data: o.TLS},
	}
	return f.repositoryChart(ctx, f.chartCache(r.Settings.ContentCache), o.RepoURL, ref, version, a, k)
}

// verifier is what a fetch checks a chart against: a PGP public keyring (a file, or its content
// in memory) for a provenance file beside the chart, or cosign's or notation's options for the
// signatures of an OCI chart. Once it verified the chart, proof says by whom.
type verifier struct {
	path     string
	data     []byte
	cosign   *provenance.CosignOptions
	notation *provenance.NotationOptions
	proof    *release.Provenance
}

// pgp reports whether k checks a provenance file against a keyring.
func (k *verifier) pgp() bool { return k != nil && !k.signatures() }

// signatures reports whether k checks an OCI chart's signatures (cosign or notation).
func (k *verifier) signatures() bool { return k != nil && (k.cosign != nil || k.notation != nil) }

// CheckKeyring checks that data is a public keyring as Helm reads one: binary OpenPGP keys, as
// gpg --export writes them (not --armor). Its error never quotes data.
func CheckKeyring(data []byte) error {
	keys, err := openpgp.ReadKeyRing(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("holds no public keyring (binary OpenPGP keys, as gpg exports them without armor): %w", err)
	}
	if len(keys) == 0 {
		return errors.New("holds no public keyring: it has no key")
	}
	return nil
}

// verifier is what r's Options ask a chart to be verified with: cosign's or notation's options,
// else with Verify the keyring, the file Keyring names or else KeyringData; nil when they ask for
// no verification.
func (r *Resolver) verifier() *verifier {
	if r.Options.Cosign != nil || r.Options.Notation != nil {
		return &verifier{cosign: r.Options.Cosign, notation: r.Options.Notation}
	}
	if !r.Options.Verify {
		return nil
	}
	if r.Options.Keyring == "" && r.Options.KeyringData != nil {
		return &verifier{data: r.Options.KeyringData}
	}
	return &verifier{path: r.Options.Keyring}
}

// verifyArchive checks the chart archive at path against its provenance file prov and the
// keyring, as Helm's downloader does. A provenance file signs the archive by its name,
// NAME-VERSION.tgz, which a file in cache does not have: a copy of that name is checked. A
// keyring in memory is written beside it. The check's failure is a ProvenanceError; its success
// is noted in k.proof.
func (k *verifier) verify(path, prov string) error {
	ch, err := chart.Load(path)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "berth-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	keyringPath := k.path
	if keyringPath == "" {
		keyringPath = filepath.Join(dir, "pubring.gpg")
		if err := os.WriteFile(keyringPath, k.data, 0o600); err != nil {
			return err
		}
	}
	named := filepath.Join(dir, ch.Metadata.Name+"-"+ch.Metadata.Version+".tgz")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := os.WriteFile(named, data, 0o600); err != nil {
		return err
	}
	v, err := downloader.VerifyChart(named, prov, keyringPath)
	if err != nil {
		return &ProvenanceError{Chart: ch.Metadata.Name + "-" + ch.Metadata.Version + ".tgz", Err: err}
	}
	k.noteVerified(v)
	return nil
}

// noteVerified notes in k.proof the PGP signature v that verified a chart: the archive's digest
// and the signing key's identity and id.
func (k *verifier) noteVerified(v *helmprov.Verification) {
	p := &release.Provenance{Provider: release.ProviderPGP, Digest: v.FileHash, Verified: time.Now().UTC()}
	if e := v.SignedBy; e != nil && e.PrimaryKey != nil {
		p.Signer = e.PrimaryKey.KeyIdString()
		// A key of several identities is named by the first in order, the same every time.
		if names := slices.Sorted(maps.Keys(e.Identities)); len(names) > 0 {
			p.Signer = names[0] + " (" + e.PrimaryKey.KeyIdString() + ")"
		}
	}
	k.proof = p
}

// helmDownload fetches REPO/CHART of the user's repositories or a chart's URL into Helm's
// caches as Helm's LocateChart does: the same downloader, index lookup, verification, TLS and
// credential rules. Helm's getter takes no context: the download runs detached (detach), each
// request bounded by RequestTimeout or what is left of ctx's deadline, through the fetcher's
// transport (its dial, TLS handshake and response header timeouts, and connections that serve
// the next fetch) unless the fetch has TLS settings of its own.
func (r *Resolver) helmDownload(ctx context.Context, f *Fetcher, ref, version string, k *verifier) (string, error) {
	o := r.Options
	timeout := f.opts.RequestTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return "", f.requestError(ctx, context.DeadlineExceeded, r.hostOf(ref), ref)
	}
	shared := []getter.Option{getter.WithTimeout(timeout)}
	if r.sharesTransport(ref) {
		shared = append(shared, getter.WithTransport(f.helmTransport()))
	}
	dl := downloader.ChartDownloader{
		Out:     r.out(),
		Keyring: o.Keyring,
		Getters: append(getter.Getters(shared...), pluginProviders(ctx, r.Settings, timeout, f.maxPluginBytes())...),
		Options: []getter.Option{
			getter.WithPassCredentialsAll(o.PassCredentialsAll),
			getter.WithTLSClientConfig(o.CertFile, o.KeyFile, o.CaFile),
			getter.WithInsecureSkipVerifyTLS(o.InsecureSkipTLSVerify),
			getter.WithPlainHTTP(o.PlainHTTP),
			getter.WithBasicAuth(o.Username, o.Password),
			getter.WithUserAgent(f.opts.UserAgent),
		},
		RepositoryConfig: r.Settings.RepositoryConfig,
		RepositoryCache:  r.Settings.RepositoryCache,
		ContentCache:     r.Settings.ContentCache,
		Cache:            f.chartCache(r.Settings.ContentCache),
	}
	if k.pgp() {
		dl.Verify = downloader.VerifyAlways
	}
	if err := os.MkdirAll(r.Settings.RepositoryCache, 0o755); err != nil {
		return "", err
	}
	path, err := detach(ctx, func() (string, error) {
		file, v, err := dl.DownloadToCache(ref, version)
		if err != nil {
			return "", err
		}
		if k.pgp() && v != nil {
			k.noteVerified(v)
		}
		return filepath.Abs(file)
	})
	if err != nil {
		return "", f.requestError(ctx, err, r.hostOf(ref), ref)
	}
	return path, nil
}

// sharesTransport reports whether the fetch of ref, by Helm's downloader, may go through the
// fetcher's shared transport: neither Options nor the repository REPO/CHART names ask for TLS
// settings (a shared transport has one TLS configuration, and Helm's getter ignores TLS
// settings when given a transport). A chart's URL may be in a repository with TLS settings of
// its own, which only Helm's downloader finds: it never shares.
func (r *Resolver) sharesTransport(ref string) bool {
	o := r.Options
	if o.CertFile != "" || o.KeyFile != "" || o.CaFile != "" || o.InsecureSkipTLSVerify {
		return false
	}
	e := r.entryOf(ref)
	return e != nil && e.CertFile == "" && e.KeyFile == "" && e.CAFile == "" && !e.InsecureSkipTLSVerify
}

// entryOf is the entry of repositories.yaml that REPO/CHART ref names, or nil.
func (r *Resolver) entryOf(ref string) *repo.Entry {
	name, _, ok := strings.Cut(ref, "/")
	if !ok || strings.Contains(ref, "://") {
		return nil
	}
	f, err := repo.LoadFile(r.Settings.RepositoryConfig)
	if err != nil {
		return nil
	}
	return f.Get(name)
}

// hostOf is the server ref is fetched from: its URL's, or that of the repository REPO/CHART
// names.
func (r *Resolver) hostOf(ref string) string {
	if e := r.entryOf(ref); e != nil {
		return hostOf(e.URL)
	}
	return hostOf(ref)
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
