package berthtest

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// ClaimingRegistry is a registry of a hostile tenant's, over TLS with a CA of its own: for any repository, it
// answers a manifest's HEAD (by any tag or digest) with one digest it was given, lists the tag
// 0.1.0, and holds no blob. Given the manifest of that digest, it serves it on GET; otherwise a
// GET of a manifest is 404 too.
type ClaimingRegistry struct {
	// Host is HOST:PORT; oci://Host/... names its repositories.
	Host string
	// CA is the PEM of the CA that signed its certificate.
	CA []byte

	mu       sync.Mutex
	requests []string
}

// Requests are the requests it was sent, as METHOD PATH.
func (r *ClaimingRegistry) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

// Ref is the oci:// reference of the repository path on the registry.
func (r *ClaimingRegistry) Ref(path string) string {
	return "oci://" + r.Host + "/" + strings.TrimPrefix(path, "/")
}

// StartClaimingRegistry starts, for the test, a registry that names digest for every manifest
// and serves manifest (when not nil) as its content, and nothing else.
func StartClaimingRegistry(t testing.TB, digest string, manifest []byte) *ClaimingRegistry {
	t.Helper()
	reg := &ClaimingRegistry{}
	notFound := func(w http.ResponseWriter, code string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"errors":[{"code":%q,"message":"unknown"}]}`, code)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		reg.mu.Lock()
		reg.requests = append(reg.requests, req.Method+" "+req.URL.Path)
		reg.mu.Unlock()
		path := req.URL.Path
		switch {
		case path == "/v2/" || path == "/v2":
			io.WriteString(w, "{}")
		case strings.HasSuffix(path, "/tags/list"):
			name := strings.TrimSuffix(strings.TrimPrefix(path, "/v2/"), "/tags/list")
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":%q,"tags":["0.1.0"]}`, name)
		case strings.Contains(path, "/manifests/"):
			size := 512
			if manifest != nil {
				size = len(manifest)
			}
			if req.Method == http.MethodGet && manifest == nil {
				notFound(w, "MANIFEST_UNKNOWN")
				return
			}
			w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
			w.Header().Set("Docker-Content-Digest", digest)
			w.Header().Set("Content-Length", strconv.Itoa(size))
			if req.Method == http.MethodGet {
				w.Write(manifest)
			}
		default:
			notFound(w, "BLOB_UNKNOWN")
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	caPEM, cert := newServerCert(t)
	reg.CA = caPEM
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	reg.Host = srv.Listener.Addr().String()
	return reg
}
