package source_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/berthdev/berth/internal/source"
	"github.com/berthdev/berth/test/testca"
)

// TestManyTenantsSendNoCredentialsOverPlainHTTP: a fetch for many tenants refuses to send
// credentials to an http:// repository, and to follow a redirect of an https:// one to plain
// HTTP; the plain HTTP server sees no credentials. The CLI's fetch sends them, as Helm does.
func TestManyTenantsSendNoCredentialsOverPlainHTTP(t *testing.T) {
	withCredentials := func(o *source.Options) { o.Username, o.Password = "ci", "s3cret" }
	manyTenants := source.DefaultFetchOptions()
	manyTenants.ManyTenants = true

	t.Run("an http repository", func(t *testing.T) {
		plain := startRecorder(t, false)
		publish(t, plain, nil)
		_, err := fetchFrom(context.Background(), settingsIn(t), source.NewFetcher(manyTenants), plain.URL, "0.1.0", withCredentials)
		var insecure *source.InsecureCredentialsError
		if !errors.As(err, &insecure) || insecure.Host != plain.Host {
			t.Fatalf("got %v, want an InsecureCredentialsError naming %s", err, plain.Host)
		}
		if anyAuthorized(plain.requests()) {
			t.Error("the plain HTTP server got credentials")
		}
		// The CLI's fetch, for a user's own repository, sends them as Helm does.
		if _, err := fetchFrom(context.Background(), settingsIn(t), source.NewFetcher(source.DefaultFetchOptions()), plain.URL, "0.1.0", withCredentials); err != nil {
			t.Errorf("the CLI's fetch: %v", err)
		}
	})

	t.Run("a redirect from https to http", func(t *testing.T) {
		plain := startRecorder(t, false)
		publish(t, plain, nil)
		ca := testca.New(t)
		redirect := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, plain.URL+r.URL.Path, http.StatusFound)
		}))
		redirect.TLS = &tls.Config{Certificates: []tls.Certificate{ca.ServerCert(t)}, MinVersion: tls.VersionTLS12}
		redirect.StartTLS()
		t.Cleanup(redirect.Close)
		_, err := fetchFrom(context.Background(), settingsIn(t), source.NewFetcher(manyTenants), redirect.URL, "0.1.0", withCredentials,
			func(o *source.Options) { o.TLS.CA = ca.PEM })
		var insecure *source.InsecureCredentialsError
		if !errors.As(err, &insecure) || !insecure.Redirect {
			t.Fatalf("got %v, want an InsecureCredentialsError of a redirect", err)
		}
		if anyAuthorized(plain.requests()) {
			t.Error("the plain HTTP server got credentials")
		}
	})
}
