package berthtest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"maps"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sirupsen/logrus"
	"golang.org/x/crypto/bcrypt"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/retry"

	// The registry's access controller and storage driver, registered by name.
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
)

// OCIRegistryOptions say how a test's OCI registry serves.
type OCIRegistryOptions struct {
	// PlainHTTP serves plain HTTP instead of TLS.
	PlainHTTP bool
	// Username and Password, when set, are the only account (htpasswd basic auth); otherwise the
	// registry takes anonymous pushes and pulls.
	Username, Password string
}

// OCIRegistry is an OCI registry (the distribution project's registry, in memory) that a test
// started in its own process.
type OCIRegistry struct {
	// Host is HOST:PORT, what `registry login` takes; oci://Host/... names its repositories.
	Host string
	// CAFile is the PEM file of the CA that signed the registry's certificate (empty for plain
	// HTTP); no system trusts it, so clients need --ca-file.
	CAFile string
	// Username and Password of its only account, if it has one.
	Username, Password string
}

// Ref is the oci:// reference of the repository path on the registry.
func (r *OCIRegistry) Ref(path string) string {
	return "oci://" + r.Host + "/" + strings.TrimPrefix(path, "/")
}

// StartOCIRegistry starts an OCI registry for the test, stopped when the test ends. With TLS
// (the default) its certificate is for 127.0.0.1 and signed by a CA the test generated.
func StartOCIRegistry(t testing.TB, opts OCIRegistryOptions) *OCIRegistry {
	t.Helper()
	dir := t.TempDir()
	conf := &configuration.Configuration{
		Storage: configuration.Storage{
			"inmemory":    configuration.Parameters{},
			"maintenance": configuration.Parameters{"uploadpurging": map[any]any{"enabled": false}},
		},
	}
	conf.Log.AccessLog.Disabled = true
	conf.HTTP.Secret = "berth-test"
	if opts.Username != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(opts.Password), bcrypt.MinCost)
		if err != nil {
			t.Fatalf("hash registry password: %v", err)
		}
		htpasswd := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(htpasswd, []byte(opts.Username+":"+string(hash)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		conf.Auth = configuration.Auth{"htpasswd": configuration.Parameters{"realm": "berth-test", "path": htpasswd}}
	}
	// The registry logs every request through logrus's standard logger, the only logger it
	// takes outside its own command.
	logrus.SetOutput(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	// handlers.NewApp is the registry's HTTP API; registry.NewRegistry wraps it with process-wide
	// health checks and telemetry that allow one registry per process, and picks no free port.
	app := handlers.NewApp(ctx, conf)
	srv := httptest.NewUnstartedServer(app)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are what some tests do
	reg := &OCIRegistry{Username: opts.Username, Password: opts.Password}
	if opts.PlainHTTP {
		srv.Start()
	} else {
		caPEM, cert := newServerCert(t)
		reg.CAFile = filepath.Join(dir, "ca.crt")
		if err := os.WriteFile(reg.CAFile, caPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		srv.StartTLS()
	}
	t.Cleanup(func() {
		srv.Close()
		cancel()
		_ = app.Shutdown()
	})
	reg.Host = srv.Listener.Addr().String()
	return reg
}

// newServerCert returns a new CA's certificate (PEM) and a certificate for 127.0.0.1 and
// localhost that it signed.
func newServerCert(t testing.TB) (caPEM []byte, cert tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "berth test registry CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// HelmFiles are the paths of Helm's files a test set for itself.
type HelmFiles struct {
	// Home holds them all: config/, cache/, data/ and docker/.
	Home string
	// RegistryConfig is the registry credentials file (HELM_REGISTRY_CONFIG).
	RegistryConfig string
}

// IsolateHelmFiles points Helm's files, for berth run in-process and for the helm binary the
// test runs, at a new temporary directory (HELM_CONFIG_HOME, HELM_CACHE_HOME, HELM_DATA_HOME,
// HELM_REGISTRY_CONFIG, and DOCKER_CONFIG, which Helm's registry client falls back to), so that
// a test never reads or writes the machine's. The test cannot run in parallel.
func IsolateHelmFiles(t *testing.T) HelmFiles {
	t.Helper()
	h := UseHelmHome(t)
	f := HelmFiles{Home: filepath.Dir(h.Config), RegistryConfig: filepath.Join(h.Config, "registry", "config.json")}
	t.Setenv("HELM_REGISTRY_CONFIG", f.RegistryConfig)
	return f
}

// PackageNewChart writes a chart named name at version with files (as WriteChart takes them)
// and packages it as helm package does; it returns the path of NAME-VERSION.tgz.
func PackageNewChart(t testing.TB, name, version string, files map[string]string) string {
	t.Helper()
	all := map[string]string{"Chart.yaml": fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\n", name, version)}
	maps.Copy(all, files)
	return PackageChart(t, WriteChart(t, name, all), t.TempDir())
}

// PushArtifact pushes to repo:tag on the registry an OCI artifact that is not a Helm chart (a
// layer and a config of another media type), as its account, and returns the manifest's digest.
func (r *OCIRegistry) PushArtifact(t testing.TB, repo, tag string) string {
	t.Helper()
	return r.Push(t, repo, tag, "application/vnd.berth.test.v1",
		&Blob{MediaType: "application/vnd.berth.test.config.v1+json", Data: []byte("{}")},
		Blob{MediaType: "application/vnd.berth.test.layer.v1", Data: []byte("not a chart")})
}

// Blob is a layer or the config of an artifact to push: its media type, content and annotations.
type Blob struct {
	MediaType   string
	Data        []byte
	Annotations map[string]string
}

// Push pushes to repo:tag on the registry an OCI image manifest of artifactType with layers and
// config (an empty one when nil), as the registry's account, and returns the manifest's digest.
func (r *OCIRegistry) Push(t testing.TB, repo, tag, artifactType string, config *Blob, layers ...Blob) string {
	t.Helper()
	ctx := t.Context()
	store := memory.New()
	push := func(b Blob) ocispec.Descriptor {
		desc := ocispec.Descriptor{MediaType: b.MediaType, Digest: digest.FromBytes(b.Data), Size: int64(len(b.Data)), Annotations: b.Annotations}
		if err := store.Push(ctx, desc, bytes.NewReader(b.Data)); err != nil {
			t.Fatalf("store %s: %v", b.MediaType, err)
		}
		return desc
	}
	opts := oras.PackManifestOptions{}
	for _, l := range layers {
		opts.Layers = append(opts.Layers, push(l))
	}
	if config != nil {
		desc := push(*config)
		opts.ConfigDescriptor = &desc
	}
	manifest, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, artifactType, opts)
	if err != nil {
		t.Fatalf("pack manifest: %v", err)
	}
	if err := store.Tag(ctx, manifest, tag); err != nil {
		t.Fatal(err)
	}
	dst := r.repository(t, repo)
	if _, err := oras.Copy(ctx, store, tag, dst, tag, oras.DefaultCopyOptions); err != nil {
		t.Fatalf("push %s:%s: %v", repo, tag, err)
	}
	return manifest.Digest.String()
}

// repository is the client of repo on the registry, as its account.
func (r *OCIRegistry) repository(t testing.TB, repo string) *remote.Repository {
	t.Helper()
	dst, err := remote.NewRepository(r.Host + "/" + repo)
	if err != nil {
		t.Fatal(err)
	}
	dst.PlainHTTP = r.CAFile == ""
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if r.CAFile != "" {
		pem, err := os.ReadFile(r.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	dst.Client = &auth.Client{
		Client:     &http.Client{Transport: retry.NewTransport(transport)},
		Credential: auth.StaticCredential(r.Host, auth.Credential{Username: r.Username, Password: r.Password}),
	}
	return dst
}

// Manifest returns the manifest of repo at reference (a tag or a digest), as the registry's
// account.
func (r *OCIRegistry) Manifest(t testing.TB, repo, reference string) []byte {
	t.Helper()
	desc, rc, err := r.repository(t, repo).FetchReference(t.Context(), reference)
	if err != nil {
		t.Fatalf("manifest %s@%s: %v", repo, reference, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, desc.Size))
	if err != nil {
		t.Fatalf("manifest %s@%s: %v", repo, reference, err)
	}
	return data
}

// FileDigests returns the SHA-256 of every file under dir, by path: compare two of them to see
// that a command changed no file there. A missing dir has none.
func FileDigests(t testing.TB, dir string) map[string][32]byte {
	t.Helper()
	files := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		files[path] = sha256.Sum256(b)
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return files
}
