package source

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// SlowTransferError is a response whose body came slower than the fetch's minimum rate: over
// Window, Host sent Got bytes where the minimum asks for MinRate bytes a second. A server that
// sends a byte every few seconds would otherwise hold its fetch (and a fetch slot) until the
// fetch's timeout.
type SlowTransferError struct {
	Host, URL string
	Got       int64
	Window    time.Duration
	MinRate   int64
}

func (e *SlowTransferError) Error() string {
	return fmt.Sprintf("host %s sent %d bytes in %s (%.1f bytes/s), below the minimum of %d bytes/s: the transfer of %s was ended; make the server answer faster, or ask the controller's operator to lower --min-fetch-rate",
		e.Host, e.Got, e.Window, float64(e.Got)/e.Window.Seconds(), e.MinRate, e.URL)
}

// watchRate ends resp's body, with a SlowTransferError, once a window of f's RateWindow passes
// in which it gave fewer bytes than MinRate asks for (the first window is the grace of a
// transfer that starts slowly); nothing with no MinRate.
func (f *Fetcher) watchRate(resp *http.Response, host, u string) {
	if f.opts.MinRate <= 0 {
		return
	}
	b := &rateBody{body: resp.Body, host: host, url: u, min: f.opts.MinRate, window: f.opts.RateWindow}
	b.mu.Lock()
	b.timer = time.AfterFunc(b.window, b.check)
	b.mu.Unlock()
	resp.Body = b
}

// rateBody is a response body under a minimum rate.
type rateBody struct {
	body      io.ReadCloser
	host, url string
	min       int64
	window    time.Duration

	mu sync.Mutex
	// got is what the current window gave.
	got    int64
	timer  *time.Timer
	err    error
	closed bool
}

func (b *rateBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got += int64(n)
	if b.err != nil {
		return n, b.err
	}
	return n, err
}

// check ends the body when the window that ended gave too little, else starts the next.
func (b *rateBody) check() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	if want := int64(float64(b.min) * b.window.Seconds()); b.got < want {
		b.err = &SlowTransferError{Host: b.host, URL: b.url, Got: b.got, Window: b.window, MinRate: b.min}
		b.mu.Unlock()
		// Unblocks a Read waiting for the next byte; it then returns b.err.
		b.body.Close()
		return
	}
	b.got = 0
	b.timer.Reset(b.window)
	b.mu.Unlock()
}

func (b *rateBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.timer.Stop()
	b.mu.Unlock()
	return b.body.Close()
}

// rateTransport carries requests through base and puts their responses under the fetcher's
// minimum rate.
type rateTransport struct {
	base http.RoundTripper
	f    *Fetcher
}

func (t *rateTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	t.f.watchRate(resp, req.URL.Host, req.URL.Redacted())
	return resp, nil
}

// helmTransport is the shared transport as Helm's getter takes it (an *http.Transport), its
// responses under the minimum rate: one that only hands requests to a rateTransport over it
// (with no TLSNextProto of its own, it never dials).
func (f *Fetcher) helmTransport() *http.Transport {
	if f.opts.MinRate <= 0 {
		return f.transport
	}
	t := &http.Transport{TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	rt := &rateTransport{base: f.transport, f: f}
	t.RegisterProtocol("http", rt)
	t.RegisterProtocol("https", rt)
	return t
}
