package source_test

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	helmcli "helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/provenance"
	"helm.sh/helm/v4/pkg/repo/v1"

	"github.com/berthdev/berth/internal/source"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/testca"
)

// privateServer is an HTTPS server with a certificate of the test's CA (or a plain HTTP one,
// without a CA) that serves files by path; with a username it asks for basic auth on every
// request, and with challenge it answers every request 401 with a basic auth challenge, as an
// OCI registry does to a client without credentials. It records, for each request, whether it
// carried an Authorization header.
type privateServer struct {
	URL, Host          string
	username, password string
	challenge          bool

	mu         sync.Mutex
	files      map[string][]byte
	authorized []bool
}

// startPrivateServer starts a privateServer; with requireClientCert it requires a client
// certificate ca signed.
func startPrivateServer(t *testing.T, ca *testca.CA, username, password string, requireClientCert bool) *privateServer {
	t.Helper()
	return serve(t, &privateServer{username: username, password: password, files: map[string][]byte{}}, ca, requireClientCert)
}

// startRecorder starts a plain HTTP privateServer without credentials, challenging every
// request with challenge.
func startRecorder(t *testing.T, challenge bool) *privateServer {
	t.Helper()
	return serve(t, &privateServer{challenge: challenge, files: map[string][]byte{}}, nil, false)
}

// serve starts s: over HTTPS with a certificate of ca, or over plain HTTP when ca is nil.
func serve(t *testing.T, s *privateServer, ca *testca.CA, requireClientCert bool) *privateServer {
	t.Helper()
	srv := httptest.NewUnstartedServer(s)
	srv.Config.ErrorLog = nil
	if ca == nil {
		srv.Start()
	} else {
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.ServerCert(t)}, MinVersion: tls.VersionTLS12}
		if requireClientCert {
			srv.TLS.ClientAuth = tls.RequireAndVerifyClientCert
			srv.TLS.ClientCAs = ca.Pool()
		}
		srv.StartTLS()
	}
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	u, _ := url.Parse(srv.URL)
	s.Host = u.Host
	return s
}

func (s *privateServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authorized = append(s.authorized, req.Header.Get("Authorization") != "")
	if s.challenge {
		w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if s.username != "" {
		if u, p, ok := req.BasicAuth(); !ok || u != s.username || p != s.password {
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	data, ok := s.files[req.URL.Path]
	if !ok {
		http.NotFound(w, req)
		return
	}
	w.Write(data)
}

// put serves data at path.
func (s *privateServer) put(path string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = data
}

// requests returns, for each request served, whether it carried credentials.
func (s *privateServer) requests() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.authorized...)
}

// publish serves on index an index.yaml of the chart web 0.1.0, whose archive chartServer
// serves (index itself when nil).
func publish(t *testing.T, index, chartServer *privateServer) {
	t.Helper()
	publishArchive(t, webChart(t, "0.1.0"), index, chartServer)
}

// publishChart serves on s an index.yaml of a chart name 0.1.0 with no templates, and its archive.
func (s *privateServer) publishChart(t *testing.T, name string) {
	t.Helper()
	publishArchive(t, berthtest.PackageNewChart(t, name, "0.1.0", nil), s, nil)
}

// publishArchive serves on index an index.yaml of the packaged chart archive, which chartServer
// serves under /charts/ (index itself when nil).
func publishArchive(t *testing.T, archive string, index, chartServer *privateServer) {
	t.Helper()
	if chartServer == nil {
		chartServer = index
	}
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(archive)
	chartServer.put("/charts/"+name, data)
	ch, err := loader.Load(archive)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := provenance.DigestFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	idx := repo.NewIndexFile()
	if err := idx.MustAdd(ch.Metadata, name, chartServer.URL+"/charts", digest); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "index.yaml")
	if err := idx.WriteFile(path, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	index.put("/index.yaml", b)
}

// access sets the credentials and TLS material of a fetch.
func access(username, password string, tlsData source.TLSData) func(*source.Options) {
	return func(o *source.Options) {
		o.Username, o.Password, o.TLS = username, password, tlsData
	}
}

// TestPrivateRepository fetches from an HTTPS chart repository with basic auth and a CA of its
// own, all through one Fetcher, in the order that would show an index or chart served from
// cache to a fetch without the right credentials.
func TestPrivateRepository(t *testing.T) {
	ca := testca.New(t)
	srv := startPrivateServer(t, ca, "tenant", "s3cret", false)
	publish(t, srv, nil)
	f := source.NewFetcher(source.DefaultFetchOptions())
	settings := settingsIn(t)
	withCA := source.TLSData{CA: ca.PEM}

	if _, err := fetchFrom(t.Context(), settings, f, srv.URL, "0.1.0", access("tenant", "s3cret", withCA)); err != nil {
		t.Fatalf("fetch with the credentials and the CA: %v", err)
	}

	tests := []struct {
		name     string
		opt      func(*source.Options)
		kind     source.Kind
		typed    func(error) (host string, ok bool)
		wantText string
	}{
		{name: "wrong password", opt: access("tenant", "wrong-pw", withCA), kind: source.KindUnauthorized,
			typed: authHost, wantText: "authentication failed (401 Unauthorized)"},
		{name: "no credentials", opt: access("", "", withCA), kind: source.KindNoCredentials,
			typed: authHost, wantText: "authentication failed (401 Unauthorized)"},
		{name: "no CA", opt: access("tenant", "s3cret", source.TLSData{}), kind: source.KindTLS,
			typed: tlsHost, wantText: "TLS handshake failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := fetchFrom(t.Context(), settings, f, srv.URL, "0.1.0", tt.opt)
			var srcErr *source.Error
			if !errors.As(err, &srcErr) || srcErr.Kind != tt.kind {
				t.Fatalf("got %v, want a source.Error of kind %q", err, tt.kind)
			}
			if host, ok := tt.typed(err); !ok || host != srv.Host {
				t.Errorf("got %v, want a typed error naming host %s", err, srv.Host)
			}
			if msg := err.Error(); !strings.Contains(msg, srv.Host) || !strings.Contains(msg, tt.wantText) {
				t.Errorf("message %q does not name host %s and %q", msg, srv.Host, tt.wantText)
			}
			if strings.Contains(err.Error(), "wrong-pw") || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("message %q holds a password", err)
			}
		})
	}
}

func authHost(err error) (string, bool) {
	var e *source.AuthError
	if !errors.As(err, &e) {
		return "", false
	}
	return e.Host, true
}

func tlsHost(err error) (string, bool) {
	var e *source.TLSError
	if !errors.As(err, &e) {
		return "", false
	}
	return e.Host, true
}

// TestCredentialsStayOnTheRepositoryHost: a chart whose URL in the index is on another server
// than the repository's is fetched without the repository's credentials, unless
// PassCredentialsAll (chart.passCredentials) says otherwise, as Helm does.
func TestCredentialsStayOnTheRepositoryHost(t *testing.T) {
	for _, pass := range []bool{false, true} {
		t.Run(fmt.Sprintf("passCredentials=%t", pass), func(t *testing.T) {
			ca := testca.New(t)
			index := startPrivateServer(t, ca, "tenant", "s3cret", false)
			charts := startPrivateServer(t, ca, "", "", false)
			publish(t, index, charts)
			f := source.NewFetcher(source.DefaultFetchOptions())
			_, err := fetchFrom(t.Context(), settingsIn(t), f, index.URL, "0.1.0", access("tenant", "s3cret", source.TLSData{CA: ca.PEM}),
				func(o *source.Options) { o.PassCredentialsAll = pass })
			if err != nil {
				t.Fatal(err)
			}
			got := charts.requests()
			if len(got) != 1 || got[0] != pass {
				t.Errorf("the chart's server saw requests with credentials %v, want [%t]", got, pass)
			}
			if idx := index.requests(); len(idx) != 1 || !idx[0] {
				t.Errorf("the repository saw requests with credentials %v, want [true]", idx)
			}
		})
	}
}

// TestClientCertificate fetches from a repository that requires a client certificate signed
// by its CA: with tls.crt and tls.key it works, without it fails as a TLS failure.
func TestClientCertificate(t *testing.T) {
	ca := testca.New(t)
	srv := startPrivateServer(t, ca, "", "", true)
	publish(t, srv, nil)
	cert, key := ca.ClientCert(t, "tenant")
	f := source.NewFetcher(source.DefaultFetchOptions())
	settings := settingsIn(t)
	if _, err := fetchFrom(t.Context(), settings, f, srv.URL, "0.1.0", access("", "", source.TLSData{CA: ca.PEM, Cert: cert, Key: key})); err != nil {
		t.Fatalf("fetch with a client certificate: %v", err)
	}
	_, err := fetchFrom(t.Context(), settings, f, srv.URL, "0.1.0", access("", "", source.TLSData{CA: ca.PEM}))
	var srcErr *source.Error
	if !errors.As(err, &srcErr) || srcErr.Kind != source.KindTLS {
		t.Fatalf("fetch without a client certificate: got %v, want a source.Error of kind %q", err, source.KindTLS)
	}
	if host, ok := tlsHost(err); !ok || host != srv.Host {
		t.Errorf("got %v, want a TLSError naming host %s", err, srv.Host)
	}
	if _, err := fetchFrom(t.Context(), settings, f, srv.URL, "0.1.0", access("", "", source.TLSData{CA: ca.PEM, Cert: cert})); err == nil || strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Errorf("fetch with tls.crt and no tls.key: got %v, want an error that names what is missing", err)
	}
}

// TestPrivateRegistry fetches from an OCI registry with htpasswd basic auth and a CA of its
// own, given a username and password or a Docker config (a kubernetes.io/dockerconfigjson
// Secret's), and checks that a chart pinned by digest, in the content cache after a fetch with
// credentials, is not served to a fetch without them.
func TestPrivateRegistry(t *testing.T) {
	berthtest.IsolateHelmFiles(t)
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{Username: "ci", Password: "s3cret"})
	caPEM, err := os.ReadFile(reg.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	digest := push(t, helmcli.New(), webChart(t, "0.1.0"), reg.Ref("charts"), source.RegistryOptions{CAFile: reg.CAFile, Username: "ci", Password: "s3cret"})
	f := source.NewFetcher(source.DefaultFetchOptions())
	settings := settingsIn(t)
	withCA := source.TLSData{CA: caPEM}
	ref := reg.Ref("charts/web")

	if _, err := fetchFrom(t.Context(), settings, f, ref, "0.1.0", access("ci", "s3cret", withCA)); err != nil {
		t.Fatalf("fetch with username and password: %v", err)
	}

	auth := base64.StdEncoding.EncodeToString([]byte("ci:s3cret"))
	dockerConfig := fmt.Sprintf(`{"auths": {"other.example": {"auth": "b3RoZXI6b3RoZXI="}, "https://%s": {"auth": %q}}}`, reg.Host, auth)
	user, pw, err := source.DockerConfigCredentials([]byte(dockerConfig), reg.Host)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fetchFrom(t.Context(), settings, f, ref+"@"+digest, "", access(user, pw, withCA)); err != nil {
		t.Fatalf("fetch with the Docker config's credentials: %v", err)
	}
	var noCreds *source.NoDockerCredentialsError
	if _, _, err := source.DockerConfigCredentials([]byte(dockerConfig), "elsewhere.example"); !errors.As(err, &noCreds) {
		t.Errorf("credentials of a registry the Docker config does not name: got %v, want a NoDockerCredentialsError", err)
	}

	for _, tt := range []struct {
		name               string
		username, password string
		want               source.Kind
	}{
		{name: "wrong password", username: "ci", password: "wrong-pw", want: source.KindUnauthorized},
		{name: "no credentials", want: source.KindNoCredentials},
	} {
		for _, r := range []string{ref, ref + "@" + digest} {
			t.Run(tt.name+" "+strings.TrimPrefix(r, ref), func(t *testing.T) {
				_, err := fetchFrom(t.Context(), settings, f, r, "0.1.0", access(tt.username, tt.password, withCA))
				var srcErr *source.Error
				if !errors.As(err, &srcErr) || srcErr.Kind != tt.want || srcErr.Host != reg.Host {
					t.Fatalf("got %v, want a source.Error of kind %q naming %s", err, tt.want, reg.Host)
				}
				if strings.Contains(err.Error(), "wrong-pw") {
					t.Errorf("message %q holds the password", err)
				}
			})
		}
	}
}

// TestManyTenants: with ManyTenants, a fetch without credentials gets none
// from the registry config file (nor Docker's), where a fetch of Helm's CLI finds them.
func TestManyTenants(t *testing.T) {
	berthtest.IsolateHelmFiles(t)
	settings := helmcli.New()
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{Username: "ci", Password: "s3cret"})
	push(t, settings, webChart(t, "0.1.0"), reg.Ref("charts"), source.RegistryOptions{CAFile: reg.CAFile, Username: "ci", Password: "s3cret"})
	if err := source.Login(t.Context(), settings, reg.Host, source.LoginOptions{Username: "ci", Password: "s3cret", CAFile: reg.CAFile}, io.Discard); err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(reg.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	withCA := access("", "", source.TLSData{CA: caPEM})
	if _, err := fetchFrom(t.Context(), settings, source.NewFetcher(source.DefaultFetchOptions()), reg.Ref("charts/web"), "0.1.0", withCA); err != nil {
		t.Fatalf("fetch with the stored credentials: %v", err)
	}
	o := source.DefaultFetchOptions()
	o.ManyTenants = true
	_, err = fetchFrom(t.Context(), settings, source.NewFetcher(o), reg.Ref("charts/web"), "0.1.0", withCA)
	var srcErr *source.Error
	if !errors.As(err, &srcErr) || srcErr.Kind != source.KindNoCredentials {
		t.Fatalf("fetch with ManyTenants and no credentials: got %v, want a source.Error of kind %q", err, source.KindNoCredentials)
	}
}

// TestCachedChartIsNotServedToAnotherTenant: with ManyTenants, a chart that one tenant fetched
// from its private repository is not taken from the content cache by another tenant whose own
// index names the same digest: the chart is downloaded for it, from where its index says, with
// its credentials (none), and refused.
func TestCachedChartIsNotServedToAnotherTenant(t *testing.T) {
	ca := testca.New(t)
	private := startPrivateServer(t, ca, "tenant", "s3cret", false)
	publish(t, private, nil)
	// The other tenant's repository, open to all, lists the private chart by its URL and digest.
	other := startPrivateServer(t, ca, "", "", false)
	idx, err := repo.LoadIndexFile(writeTemp(t, private.files["/index.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	other.put("/index.yaml", private.files["/index.yaml"])
	if len(idx.Entries["web"]) != 1 {
		t.Fatalf("the index has %d entries of web", len(idx.Entries["web"]))
	}

	o := source.DefaultFetchOptions()
	o.ManyTenants = true
	f := source.NewFetcher(o)
	settings := settingsIn(t)
	withCA := source.TLSData{CA: ca.PEM}
	if _, err := fetchFrom(t.Context(), settings, f, private.URL, "0.1.0", access("tenant", "s3cret", withCA)); err != nil {
		t.Fatalf("the private repository's tenant: %v", err)
	}
	_, err = fetchFrom(t.Context(), settings, f, other.URL, "0.1.0", access("", "", withCA))
	if host, ok := authHost(err); !ok || host != private.Host {
		t.Fatalf("another tenant's index naming the private chart: got %v, want an AuthError of %s", err, private.Host)
	}
	if _, err := fetchFrom(t.Context(), settings, f, private.URL, "0.1.0", access("tenant", "s3cret", withCA)); err != nil {
		t.Fatalf("the private repository's tenant again: %v", err)
	}
}

// writeTemp writes data to a file of the test's and returns its path.
func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
