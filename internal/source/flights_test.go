package source_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/source"
)

// TestSameDigestElsewhereIsNotHeld: two repositories list the same chart, by the same digest;
// one never sends it. A fetch from the other, while the first hangs, gets the chart: fetches of
// one digest from two URLs are two fetches, not one that the slower answers for both.
func TestSameDigestElsewhereIsNotHeld(t *testing.T) {
	healthy := newCountingRepo(t, "etag", nil)
	arrived := make(chan struct{}, 1)
	stop := make(chan struct{})
	var hungURL string
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/index.yaml" {
			w.Write(bytes.ReplaceAll(healthy.indexData, []byte(healthy.URL), []byte(hungURL)))
			return
		}
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(hung.Close)
	t.Cleanup(func() { close(stop) })
	hungURL = hung.URL

	f := source.NewFetcher(patient())
	settings := settingsIn(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := fetchFrom(ctx, settings, f, hung.URL, "0.1.0")
		done <- err
	}()
	<-arrived

	// Bounded so that a fetch held by the hung one fails the test rather than hanging it.
	within, stopWaiting := context.WithTimeout(t.Context(), time.Minute)
	defer stopWaiting()
	if _, err := fetchFrom(within, settings, f, healthy.URL, "0.1.0"); err != nil {
		t.Errorf("fetch of a chart from a repository that answers, while another repository listing the same digest hangs: %v", err)
	}
	cancel()
	<-done
}
