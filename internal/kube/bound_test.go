package kube

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// TestBoundedTransport: a request the server takes and never answers ends at the bound; a
// watch is left to its context; an answered request's body can be read after RoundTrip.
func TestBoundedTransport(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			io.WriteString(w, `{"major":"1"}`)
			return
		}
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)
	client := &http.Client{Transport: &boundedTransport{next: http.DefaultTransport, timeout: 100 * time.Millisecond}}

	resp, err := client.Get(srv.URL + "/version")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != `{"major":"1"}` {
		t.Fatalf("answered request: %q, %v", body, err)
	}

	resp, err = client.Get(srv.URL + "/api/v1/namespaces/shop/configmaps/web")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("request never answered: got %v, want it to end at the bound", err)
	}

	// A watch outlives the bound: it ends with its own context, canceled here once the
	// bound has passed for a request started with it.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/namespaces/shop/configmaps?watch=true", nil)
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	bounded, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/namespaces/shop/pods/web", nil)
	if r, err := client.Do(bounded); err == nil {
		io.ReadAll(r.Body)
		r.Body.Close()
	}
	// The bounded request above has ended, past the bound of a request started before it: the
	// watch ends with its context's cancellation, not with the bound.
	cancel()
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("watch ended with %v, want its context's cancellation", err)
	}
}

// TestLongRunning: only what a request asks for makes it long-running, never its path.
func TestLongRunning(t *testing.T) {
	for path, want := range map[string]bool{
		"/api/v1/namespaces/a/pods?watch=true":                  true,
		"/api/v1/namespaces/a/pods?watch=1":                     true,
		"/api/v1/namespaces/a/pods/p/log?follow=true":           true,
		"/api/v1/namespaces/a/pods?watch=false":                 false,
		"/api/v1/namespaces/a/pods/p/log":                       false,
		"/apis/apps/v1/namespaces/a/deployments/web":            false,
		"/api/v1/namespaces/a/pods?labelSelector=app%3Dwatcher": false,
		"/api/v1/namespaces/a/pods?labelSelector=watch%3Dtrue":  false,
		// The old watch paths are not used by client-go; a path can be a name.
		"/api/v1/watch/namespaces/a/pods": false,
	} {
		req := httptest.NewRequest(http.MethodGet, "http://cluster"+path, nil)
		if got := longRunning(req); got != want {
			t.Errorf("%s: long-running %t, want %t", path, got, want)
		}
	}
}

// TestLongRunningNotByName: a namespace, object, ServiceAccount, group or subresource named
// like a stream does not make a request long-running, wherever the name is in the path.
func TestLongRunningNotByName(t *testing.T) {
	for _, name := range []string{"proxy", "exec", "attach", "portforward", "watch", "log"} {
		for _, path := range []string{
			"/api/v1/namespaces/" + name,
			"/api/v1/namespaces/" + name + "/serviceaccounts/web",
			"/api/v1/namespaces/shop/serviceaccounts/" + name,
			"/api/v1/namespaces/" + name + "/serviceaccounts/" + name,
			"/api/v1/namespaces/shop/secrets/" + name,
			"/api/v1/namespaces/shop/pods/" + name + "/" + name,
			"/api/v1/namespaces/shop/pods/web/" + name,
			"/api/v1/namespaces/shop/pods/web/" + name + "/",
			"/api/v1/namespaces/shop/services/" + name + "/proxy",
			"/api/v1/namespaces/shop/services/" + name + ":80/proxy/healthz",
			"/api/v1/nodes/" + name + "/proxy/metrics",
			"/apis/" + name + ".example.com/v1/namespaces/shop/" + name + "s/" + name,
			"/api/v1/" + name + "/namespaces/shop/pods",
			"/" + name,
			"/version/" + name,
		} {
			for _, query := range []string{"", "?labelSelector=" + name, "?fieldSelector=metadata.name%3D" + name, "?" + name + "ing=true"} {
				req := httptest.NewRequest(http.MethodGet, "http://cluster"+path+query, nil)
				if longRunning(req) {
					t.Errorf("%s%s: long-running, want bounded", path, query)
				}
			}
		}
	}
}

// TestBoundedByVerbNotPath: a request to a ServiceAccount named proxy that the server takes and
// never answers ends at the bound.
func TestBoundedByVerbNotPath(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)
	client := &http.Client{Transport: &boundedTransport{next: http.DefaultTransport, timeout: 100 * time.Millisecond}}
	for _, name := range []string{"proxy", "exec", "attach", "portforward"} {
		_, err := client.Get(srv.URL + "/api/v1/namespaces/" + name + "/serviceaccounts/" + name)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("request for ServiceAccount %s never answered: got %v, want it to end at the bound", name, err)
		}
	}
}

// FuzzLongRunning: whatever a tenant names (a namespace, an object, an account), a request
// whose path carries the name and whose query asks for no watch or follow is bounded.
func FuzzLongRunning(f *testing.F) {
	for _, s := range []string{"proxy", "exec", "attach", "portforward", "watch", "log", "a/proxy", "x?watch=true", "%3Fwatch=true", "#follow=true"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		u := &url.URL{Scheme: "https", Host: "cluster", Path: "/api/v1/namespaces/" + name + "/serviceaccounts/" + name}
		req := &http.Request{Method: http.MethodGet, URL: u}
		if longRunning(req) {
			t.Errorf("%s: long-running, want bounded", u)
		}
	})
}
