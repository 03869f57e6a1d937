package kube

import (
	"context"
	"io"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
)

// RequestTimeout bounds each request to the API server that is not a watch or a stream, its
// body included: the API server's own bound of such a request (its --request-timeout default).
// A connection that takes a request and never answers ends there, whatever the caller's context.
const RequestTimeout = 60 * time.Second

// BoundRequests makes every request of cfg that is not a watch or a followed log end within
// RequestTimeout, whatever its path names. Watches and followed logs are bounded by their
// contexts.
func BoundRequests(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &boundedTransport{next: rt, timeout: RequestTimeout}
	})
}

// boundedTransport bounds each request that is not long-running by timeout.
type boundedTransport struct {
	next    http.RoundTripper
	timeout time.Duration
}

// boundKey marks a request's context as bounded already (a config wrapped twice).
type boundKey struct{}

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if longRunning(req) || req.Context().Value(boundKey{}) != nil {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(context.WithValue(req.Context(), boundKey{}, true), t.timeout)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// WrappedRoundTripper lets client-go see through the wrap.
func (t *boundedTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// longRunning reports whether req is a watch or a followed log, which the API server does not
// bound either. Only what the request itself asks for counts (watch=true or 1, follow=true),
// never a segment of its path: a namespace, an object or a ServiceAccount may be named watch,
// proxy, exec, attach or portforward, and its requests are bounded like any other. berth makes
// no exec, attach, port-forward or proxy requests.
func longRunning(req *http.Request) bool {
	q := req.URL.Query()
	switch q.Get("watch") {
	case "true", "1":
		return true
	}
	return q.Get("follow") == "true"
}

// cancelOnClose ends a request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
