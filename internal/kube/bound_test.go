package kube

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
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

func TestLongRunning(t *testing.T) {
	for path, want := range map[string]bool{
		"/api/v1/namespaces/a/pods?watch=true":                  true,
		"/api/v1/watch/namespaces/a/pods":                       true,
		"/api/v1/namespaces/a/pods/p/log?follow=true":           true,
		"/api/v1/namespaces/a/pods/p/exec?command=sh":           true,
		"/api/v1/namespaces/a/pods/p/log":                       false,
		"/apis/apps/v1/namespaces/a/deployments/web":            false,
		"/api/v1/namespaces/a/pods?labelSelector=app%3Dwatcher": false,
	} {
		req := httptest.NewRequest(http.MethodGet, "http://cluster"+path, nil)
		if got := longRunning(req); got != want {
			t.Errorf("%s: long-running %t, want %t", path, got, want)
		}
	}
}
