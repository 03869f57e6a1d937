package source_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/berthdev/berth/internal/source"
	"github.com/berthdev/berth/test/berthtest"
)

// TestCachedOCIChartIsNotServedToAnotherRegistry: with ManyTenants, a private chart that one
// tenant pulled with its credentials is not taken from the content cache by a fetch from another
// registry that names its digest (by a tag, or the digest asked for) and holds nothing of it, or
// only its manifest: that registry must serve the content, and does not.
func TestCachedOCIChartIsNotServedToAnotherRegistry(t *testing.T) {
	berthtest.IsolateHelmFiles(t)
	settings := settingsIn(t)
	private := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{Username: "ci", Password: "s3cret"})
	digest := push(t, settings, webChart(t, "0.1.0"), private.Ref("charts"), source.RegistryOptions{CAFile: private.CAFile, Username: "ci", Password: "s3cret"})
	caPEM, err := os.ReadFile(private.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	o := source.DefaultFetchOptions()
	o.ManyTenants = true
	f := source.NewFetcher(o)
	owner := access("ci", "s3cret", source.TLSData{CA: caPEM})
	if _, err := fetchFrom(t.Context(), settings, f, private.Ref("charts/web"), "0.1.0", owner); err != nil {
		t.Fatalf("the private registry's tenant: %v", err)
	}

	manifest := private.Manifest(t, "charts/web", digest)
	for _, served := range []struct {
		name     string
		manifest []byte
	}{{"HEAD only", nil}, {"the manifest and no blob", manifest}} {
		hostile := berthtest.StartClaimingRegistry(t, digest, served.manifest)
		for _, ref := range []string{hostile.Ref("x/web") + "@" + digest, hostile.Ref("x/web:0.1.0"), hostile.Ref("x/web")} {
			t.Run(served.name+" "+strings.TrimPrefix(ref, hostile.Ref("x/web")), func(t *testing.T) {
				version := ""
				if ref == hostile.Ref("x/web") {
					version = "0.1.0"
				}
				path, err := fetchFrom(t.Context(), settings, f, ref, version, access("", "", source.TLSData{CA: hostile.CA}))
				var srcErr *source.Error
				if !errors.As(err, &srcErr) || srcErr.Kind != source.KindNotServed || srcErr.Host != hostile.Host {
					t.Fatalf("got %q, %v; want a source.Error of kind %q naming %s", path, err, source.KindNotServed, hostile.Host)
				}
				var notServed *source.NotServedError
				if !errors.As(err, &notServed) || notServed.Digest != digest {
					t.Errorf("got %v, want a NotServedError of %s", err, digest)
				}
			})
		}
	}
	if _, err := fetchFrom(t.Context(), settings, f, private.Ref("charts/web")+"@"+digest, "", owner); err != nil {
		t.Fatalf("the private registry's tenant again: %v", err)
	}
}

// TestManyTenantsRegistryCache: with ManyTenants, a chart of a registry open to all is pulled
// once for each set of credentials and TLS settings, and then taken from the content cache.
func TestManyTenantsRegistryCache(t *testing.T) {
	berthtest.IsolateHelmFiles(t)
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{PlainHTTP: true})
	settings := settingsIn(t)
	push(t, settings, webChart(t, "0.1.0"), reg.Ref("charts"), source.RegistryOptions{PlainHTTP: true})

	var mu sync.Mutex
	blobs := 0
	target, err := url.Parse("http://" + reg.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			mu.Lock()
			blobs++
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	ref := "oci://" + hostOf(front.URL) + "/charts/web"
	pulled := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := blobs
		blobs = 0
		return n
	}

	o := source.DefaultFetchOptions()
	o.ManyTenants = true
	f := source.NewFetcher(o)
	for _, step := range []struct {
		name   string
		opt    func(*source.Options)
		pulled bool
	}{
		{"anonymous", func(o *source.Options) { o.PlainHTTP = true }, true},
		{"anonymous again", func(o *source.Options) { o.PlainHTTP = true }, false},
		{"with credentials", func(o *source.Options) { o.PlainHTTP, o.Username, o.Password = true, "other", "pw" }, true},
		{"with credentials again", func(o *source.Options) { o.PlainHTTP, o.Username, o.Password = true, "other", "pw" }, false},
		{"anonymous once more", func(o *source.Options) { o.PlainHTTP = true }, false},
	} {
		if _, err := fetchFrom(t.Context(), settings, f, ref, "0.1.0", step.opt); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if n := pulled(); (n > 0) != step.pulled {
			t.Errorf("%s: %d blobs downloaded, want pulled=%t", step.name, n, step.pulled)
		}
	}
}
