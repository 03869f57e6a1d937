package source_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/provenance"
	"helm.sh/helm/v4/pkg/repo/v1"

	"github.com/berthdev/berth/internal/source"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/testca"
)

// servePackage serves on srv the archive at path as /charts/web-0.1.0.tgz, prov (when not
// nil) beside it as .prov, and an index.yaml that gives the archive's digest.
func servePackage(t *testing.T, srv *privateServer, path string, prov []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	srv.put("/charts/web-0.1.0.tgz", data)
	if prov != nil {
		srv.put("/charts/web-0.1.0.tgz.prov", prov)
	}
	ch, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := provenance.DigestFile(path)
	if err != nil {
		t.Fatal(err)
	}
	idx := repo.NewIndexFile()
	if err := idx.MustAdd(ch.Metadata, "web-0.1.0.tgz", srv.URL+"/charts", digest); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "index.yaml")
	if err := idx.WriteFile(out, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	srv.put("/index.yaml", b)
}

// signedWeb packages web 0.1.0 and signs it with key, as helm package --sign does; it returns
// the archive and its provenance file.
func signedWeb(t *testing.T, key berthtest.SigningKey) (string, []byte) {
	t.Helper()
	archive := webChart(t, "0.1.0")
	p := action.NewPackage()
	p.Sign, p.Key, p.Keyring = true, key.Name, key.Secring
	if err := p.Clearsign(archive); err != nil {
		t.Fatalf("sign %s: %v", archive, err)
	}
	prov, err := os.ReadFile(archive + ".prov")
	if err != nil {
		t.Fatal(err)
	}
	return archive, prov
}

// TestVerifyWithKeyringData: a chart of a repository given by URL is checked against a keyring
// in memory (the controller's, from a Secret): the chart signed by the keyring's key is fetched;
// one signed by another key, a chart that is not the one signed, and a chart with no provenance
// file fail with a ProvenanceError of KindUnverified, and leave nothing in the cache.
func TestVerifyWithKeyringData(t *testing.T) {
	ca := testca.New(t)
	signer, other := berthtest.NewSigningKey(t, "signer"), berthtest.NewSigningKey(t, "other")
	pubring, err := os.ReadFile(signer.Pubring)
	if err != nil {
		t.Fatal(err)
	}
	signed, prov := signedWeb(t, signer)
	_, otherProv := signedWeb(t, other)
	tampered := berthtest.PackageNewChart(t, "web", "0.1.0", map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tampered\n",
	})

	tests := []struct {
		name        string
		archive     string
		prov        []byte
		wantErr     string
		wantMissing bool
	}{
		{name: "signed by the keyring's key", archive: signed, prov: prov},
		{name: "signed by another key", archive: signed, prov: otherProv, wantErr: "unknown"},
		{name: "tampered chart", archive: tampered, prov: prov, wantErr: "sha256 sum does not match"},
		{name: "no provenance file", archive: signed, wantErr: "failed to fetch provenance", wantMissing: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startPrivateServer(t, ca, "", "", false)
			servePackage(t, srv, tt.archive, tt.prov)
			settings := settingsIn(t)
			f := source.NewFetcher(source.DefaultFetchOptions())
			path, err := fetchFrom(t.Context(), settings, f, srv.URL, "0.1.0", func(o *source.Options) {
				o.TLS = source.TLSData{CA: ca.PEM}
				o.Verify, o.KeyringData = true, pubring
			})
			if tt.wantErr == "" {
				if len(filesUnder(settings.ContentCache)) == 0 {
					t.Error("the content cache is empty after a fetch")
				}
				if err != nil {
					t.Fatalf("fetch of a chart signed by the keyring's key: %v", err)
				}
				if _, err := os.Stat(path); err != nil {
					t.Errorf("fetched chart: %v", err)
				}
				return
			}
			var srcErr *source.Error
			if !errors.As(err, &srcErr) || srcErr.Kind != source.KindUnverified {
				t.Fatalf("got %v, want a source.Error of kind %q", err, source.KindUnverified)
			}
			var provErr *source.ProvenanceError
			if !errors.As(err, &provErr) || provErr.Missing != tt.wantMissing {
				t.Fatalf("got %v, want a ProvenanceError with Missing %t", err, tt.wantMissing)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("message %q does not hold %q", err, tt.wantErr)
			}
			if left := filesUnder(settings.ContentCache); len(left) > 0 {
				t.Errorf("a failed check left %v in the content cache", left)
			}
		})
	}
}

// TestVerifyProvenanceOfOneRepositoryIsNotAnother's: a tenant that serves a chart (the same
// archive, so the same digest) with a provenance file of its own, signed by its own key, does
// not give it to a fetch of that chart from another repository through the same cache.
func TestVerifyProvenanceOfOneRepositoryIsNotAnothers(t *testing.T) {
	ca := testca.New(t)
	signer, tenant := berthtest.NewSigningKey(t, "signer"), berthtest.NewSigningKey(t, "tenant")
	signed, prov := signedWeb(t, signer)
	tenantProv := func() []byte {
		archive := webChart(t, "0.1.0")
		data, err := os.ReadFile(signed)
		if err != nil {
			t.Fatal(err)
		}
		// The very archive signer signed, signed again by the tenant's key.
		if err := os.WriteFile(archive, data, 0o644); err != nil {
			t.Fatal(err)
		}
		p := action.NewPackage()
		p.Sign, p.Key, p.Keyring = true, tenant.Name, tenant.Secring
		if err := p.Clearsign(archive); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(archive + ".prov")
		if err != nil {
			t.Fatal(err)
		}
		return b
	}()
	settings := settingsIn(t)
	f := source.NewFetcher(source.DefaultFetchOptions())
	for _, r := range []struct {
		key  berthtest.SigningKey
		prov []byte
	}{{tenant, tenantProv}, {signer, prov}} {
		pubring, err := os.ReadFile(r.key.Pubring)
		if err != nil {
			t.Fatal(err)
		}
		srv := startPrivateServer(t, ca, "", "", false)
		servePackage(t, srv, signed, r.prov)
		if _, err := fetchFrom(t.Context(), settings, f, srv.URL, "0.1.0", func(o *source.Options) {
			o.TLS = source.TLSData{CA: ca.PEM}
			o.Verify, o.KeyringData = true, pubring
		}); err != nil {
			t.Fatalf("fetch from %s verified by %s's key: %v", srv.URL, r.key.Name, err)
		}
	}
}

// filesUnder lists the files under dir, none when it does not exist.
func filesUnder(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, path)
		}
		return nil
	})
	return out
}

// TestVerifyOCIProvenanceLayer: a chart pushed with its provenance file (Helm's provenance
// layer) verifies against the signer's keyring in memory, not against another's; a chart
// pushed without one fails as Missing.
func TestVerifyOCIProvenanceLayer(t *testing.T) {
	berthtest.IsolateHelmFiles(t)
	settings := settingsIn(t)
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{})
	tlsOpts := source.RegistryOptions{CAFile: reg.CAFile}
	signer, other := berthtest.NewSigningKey(t, "signer"), berthtest.NewSigningKey(t, "other")
	signed, _ := signedWeb(t, signer)
	push(t, settings, signed, reg.Ref("charts"), tlsOpts)
	push(t, settings, webChart(t, "0.2.0"), reg.Ref("charts"), tlsOpts)

	tests := []struct {
		name, version string
		key           berthtest.SigningKey
		wantErr       string
		wantMissing   bool
	}{
		{name: "signed, the signer's keyring", version: "0.1.0", key: signer},
		{name: "signed, another keyring", version: "0.1.0", key: other, wantErr: "unknown"},
		{name: "unsigned", version: "0.2.0", key: signer, wantErr: "failed to fetch provenance", wantMissing: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pubring, err := os.ReadFile(tt.key.Pubring)
			if err != nil {
				t.Fatal(err)
			}
			f := source.NewFetcher(source.DefaultFetchOptions())
			_, err = fetchFrom(t.Context(), settingsIn(t), f, reg.Ref("charts/web"), tt.version, func(o *source.Options) {
				o.CaFile = reg.CAFile
				o.Verify, o.KeyringData = true, pubring
			})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("fetch of a chart signed by the keyring's key: %v", err)
				}
				return
			}
			var provErr *source.ProvenanceError
			if !errors.As(err, &provErr) || provErr.Missing != tt.wantMissing || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v, want a ProvenanceError with Missing %t holding %q", err, tt.wantMissing, tt.wantErr)
			}
		})
	}
}

// TestCheckKeyring: a keyring as gpg --export writes it passes; anything else fails without
// quoting what it holds.
func TestCheckKeyring(t *testing.T) {
	pubring, err := os.ReadFile(berthtest.NewSigningKey(t, "signer").Pubring)
	if err != nil {
		t.Fatal(err)
	}
	if err := source.CheckKeyring(pubring); err != nil {
		t.Errorf("a public keyring: %v", err)
	}
	for _, data := range [][]byte{nil, []byte("s3cret, not a keyring")} {
		if err := source.CheckKeyring(data); err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("CheckKeyring(%q) = %v, want an error that does not quote it", data, err)
		}
	}
}

// TestLocateVerifiedSaysWhoSigned: a chart verified against a keyring comes with the proof of
// it (the signing key and the archive's digest); one fetched without verification, with none.
func TestLocateVerifiedSaysWhoSigned(t *testing.T) {
	ca := testca.New(t)
	signer := berthtest.NewSigningKey(t, "signer")
	pubring, err := os.ReadFile(signer.Pubring)
	if err != nil {
		t.Fatal(err)
	}
	signed, prov := signedWeb(t, signer)
	digest, err := provenance.DigestFile(signed)
	if err != nil {
		t.Fatal(err)
	}
	srv := startPrivateServer(t, ca, "", "", false)
	servePackage(t, srv, signed, prov)
	for _, verify := range []bool{true, false} {
		opts := source.Options{TLS: source.TLSData{CA: ca.PEM}}
		opts.Version, opts.Verify, opts.RepoURL = "0.1.0", verify, srv.URL
		if verify {
			opts.KeyringData = pubring
		}
		r := &source.Resolver{Settings: settingsIn(t), Options: opts, Fetcher: source.NewFetcher(source.DefaultFetchOptions())}
		_, proof, err := r.LocateVerified(t.Context(), "web")
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case !verify && proof != nil:
			t.Errorf("a chart fetched without verification came with a proof: %+v", proof)
		case verify && (proof == nil || proof.Provider != "pgp" || !strings.Contains(proof.Signer, "signer") ||
			proof.Digest != "sha256:"+digest || proof.Reference != "web" || proof.Verified.IsZero()):
			t.Errorf("proof %+v, want pgp, signed by key signer, of digest sha256:%s, of chart web", proof, digest)
		}
	}
}
