package testenv

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// validatePath is where the webhook answers with its current mode.
	validatePath = "/validate"
	// probePath is where the webhook always denies, with probeMessage; it
	// tells when the API server has started calling a configuration.
	probePath    = "/probe"
	probeMessage = "berth-testenv probe"
	// maxReviewBytes bounds the size of an AdmissionReview the webhook reads.
	maxReviewBytes = 3 << 20
)

// Mode is how a Webhook answers admission requests.
type Mode struct {
	action  action
	message string
}

type action int

const (
	allow action = iota
	deny
	hang
)

// Allow admits every request.
func Allow() Mode { return Mode{action: allow} }

// Deny rejects every request with message and code 403.
func Deny(message string) Mode { return Mode{action: deny, message: message} }

// Hang answers no request: each waits until the API server gives up on it
// (its timeoutSeconds) or the webhook stops.
func Hang() Mode { return Mode{action: hang} }

func (m Mode) String() string {
	switch m.action {
	case deny:
		return fmt.Sprintf("Deny(%q)", m.message)
	case hang:
		return "Hang"
	default:
		return "Allow"
	}
}

// Webhook is an HTTPS admission webhook server on 127.0.0.1 that answers
// admission.k8s.io/v1 AdmissionReviews according to its mode.
type Webhook struct {
	// URL is where the webhook validates requests, e.g. https://127.0.0.1:41234/validate.
	URL string
	// CABundle is the PEM CA certificate that signed the serving certificate.
	CABundle []byte

	mode     atomic.Pointer[Mode]
	requests atomic.Int64
	stopped  chan struct{}
	stopOnce sync.Once
	server   *http.Server
}

// StartWebhook starts a webhook in mode, stopped when the test ends.
func StartWebhook(t testing.TB, mode Mode) *Webhook {
	t.Helper()
	w, err := startWebhook(mode)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(w.Stop)
	return w
}

func startWebhook(mode Mode) (*Webhook, error) {
	cert, caBundle, err := servingCert()
	if err != nil {
		return nil, fmt.Errorf("start webhook: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start webhook: %w", err)
	}
	w := newWebhook(mode)
	w.CABundle = caBundle
	w.URL = "https://" + ln.Addr().String() + validatePath
	w.server = &http.Server{
		Handler:           w,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0), // handshakes the API server abandons
	}
	go w.server.ServeTLS(ln, "", "")
	return w, nil
}

func newWebhook(mode Mode) *Webhook {
	w := &Webhook{stopped: make(chan struct{})}
	w.mode.Store(&mode)
	return w
}

// SetMode changes how the webhook answers from now on; requests already
// hanging keep hanging.
func (w *Webhook) SetMode(mode Mode) { w.mode.Store(&mode) }

// Mode returns how the webhook answers.
func (w *Webhook) Mode() Mode { return *w.mode.Load() }

// Requests returns how many admission requests the webhook has received at
// its URL.
func (w *Webhook) Requests() int64 { return w.requests.Load() }

// Stop closes the server and its connections: its port refuses connections
// from then on, as when a webhook's backend is down. Hanging requests end.
func (w *Webhook) Stop() {
	w.stopOnce.Do(func() {
		close(w.stopped)
		if w.server != nil {
			w.server.Close()
		}
	})
}

// ServeHTTP answers an AdmissionReview.
func (w *Webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var mode Mode
	switch r.URL.Path {
	case validatePath:
		w.requests.Add(1)
		mode = w.Mode()
	case probePath:
		mode = Deny(probeMessage)
	default:
		http.NotFound(rw, r)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(rw, "admission reviews are POSTed", http.StatusMethodNotAllowed)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(http.MaxBytesReader(rw, r.Body, maxReviewBytes)).Decode(&review); err != nil {
		http.Error(rw, fmt.Sprintf("decode AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	if review.Request == nil {
		http.Error(rw, "AdmissionReview has no request", http.StatusBadRequest)
		return
	}
	if mode.action == hang {
		w.hang(r.Context())
		return
	}
	writeReview(rw, respond(review.Request, mode))
}

// hang blocks until the request ends or the webhook stops.
func (w *Webhook) hang(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-w.stopped:
	}
}

// respond builds the response to req in mode, which is Allow or Deny.
func respond(req *admissionv1.AdmissionRequest, mode Mode) *admissionv1.AdmissionReview {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: mode.action == allow}
	if mode.action == deny {
		resp.Result = &metav1.Status{
			Status:  metav1.StatusFailure,
			Message: mode.message,
			Reason:  metav1.StatusReasonForbidden,
			Code:    http.StatusForbidden,
		}
	}
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: resp,
	}
}

func writeReview(rw http.ResponseWriter, review *admissionv1.AdmissionReview) {
	body, err := json.Marshal(review)
	if err != nil {
		http.Error(rw, fmt.Sprintf("encode AdmissionReview: %v", err), http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.Write(body)
}
