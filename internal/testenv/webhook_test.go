package testenv

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func reviewBody(t *testing.T, uid types.UID) []byte {
	t.Helper()
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  &admissionv1.AdmissionRequest{UID: uid, Operation: admissionv1.Create, Namespace: "ns", Name: "a"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func TestWebhookResponses(t *testing.T) {
	tests := []struct {
		name        string
		mode        Mode
		path        string
		wantAllowed bool
		wantMessage string
		wantCounted bool
	}{
		{"allow", Allow(), validatePath, true, "", true},
		{"deny", Deny("no hooks today"), validatePath, false, "no hooks today", true},
		{"probe denies in any mode", Allow(), probePath, false, probeMessage, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWebhook(tt.mode)
			rec := httptest.NewRecorder()
			w.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, tt.path, bytes.NewReader(reviewBody(t, "uid-1"))))
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d, want 200: %s", rec.Code, rec.Body)
			}
			var got admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("decode response %s: %v", rec.Body, err)
			}
			if got.APIVersion != "admission.k8s.io/v1" || got.Kind != "AdmissionReview" {
				t.Errorf("response is %s %s, want admission.k8s.io/v1 AdmissionReview", got.APIVersion, got.Kind)
			}
			resp := got.Response
			if resp == nil {
				t.Fatalf("response has no response: %s", rec.Body)
			}
			if resp.UID != "uid-1" || resp.Allowed != tt.wantAllowed {
				t.Errorf("response uid %q allowed %v, want uid-1 allowed %v", resp.UID, resp.Allowed, tt.wantAllowed)
			}
			if !tt.wantAllowed && (resp.Result == nil || resp.Result.Message != tt.wantMessage || resp.Result.Code != 403) {
				t.Errorf("denial result %+v, want message %q code 403", resp.Result, tt.wantMessage)
			}
			if wantCount := map[bool]int64{true: 1}[tt.wantCounted]; w.Requests() != wantCount {
				t.Errorf("Requests() = %d, want %d", w.Requests(), wantCount)
			}
		})
	}
}

func TestWebhookBadRequests(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		want                     int
	}{
		{"not JSON", http.MethodPost, validatePath, "{", http.StatusBadRequest},
		{"no request", http.MethodPost, validatePath, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, http.StatusBadRequest},
		{"GET", http.MethodGet, validatePath, "", http.StatusMethodNotAllowed},
		{"unknown path", http.MethodPost, "/mutate", "{}", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			newWebhook(Allow()).ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body)))
			if rec.Code != tt.want {
				t.Errorf("status %d, want %d", rec.Code, tt.want)
			}
		})
	}
}

func TestWebhookHangEnds(t *testing.T) {
	t.Run("when the request ends", func(t *testing.T) {
		w := newWebhook(Hang())
		ctx, cancel := context.WithCancel(context.Background())
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, validatePath, bytes.NewReader(reviewBody(t, "u")))
		done := serveAsync(w, req)
		cancel()
		<-done
	})
	t.Run("when the webhook stops", func(t *testing.T) {
		w := newWebhook(Hang())
		req := httptest.NewRequest(http.MethodPost, validatePath, bytes.NewReader(reviewBody(t, "u")))
		done := serveAsync(w, req)
		w.Stop()
		<-done
		if w.Requests() != 1 {
			t.Errorf("Requests() = %d, want 1", w.Requests())
		}
	})
}

func serveAsync(w *Webhook, req *http.Request) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.ServeHTTP(httptest.NewRecorder(), req)
	}()
	return done
}

func TestServingCert(t *testing.T) {
	cert, caPEM, err := servingCert()
	if err != nil {
		t.Fatalf("servingCert: %v", err)
	}
	block, _ := pem.Decode(caPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("CA bundle is not a PEM certificate: %q", caPEM)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool}); err != nil {
			t.Errorf("serving certificate does not verify for %s: %v", host, err)
		}
	}
}

// TestStartWebhook serves over TLS as the API server calls it, switches
// modes and stops.
func TestStartWebhook(t *testing.T) {
	w := StartWebhook(t, Allow())
	if !strings.HasPrefix(w.URL, "https://127.0.0.1:") || !strings.HasSuffix(w.URL, validatePath) {
		t.Fatalf("URL = %s, want https://127.0.0.1:PORT%s", w.URL, validatePath)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(w.CABundle) {
		t.Fatal("CABundle holds no certificate")
	}
	client := &http.Client{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		Timeout:   10 * time.Second,
	}
	post := func() (*admissionv1.AdmissionResponse, error) {
		resp, err := client.Post(w.URL, "application/json", bytes.NewReader(reviewBody(t, "u")))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(resp.Body).Decode(&review); err != nil {
			return nil, err
		}
		return review.Response, nil
	}

	if resp, err := post(); err != nil || !resp.Allowed {
		t.Fatalf("allow: response %+v, error %v", resp, err)
	}
	w.SetMode(Deny("stop"))
	if resp, err := post(); err != nil || resp.Allowed || resp.Result.Message != "stop" {
		t.Fatalf("deny: response %+v, error %v", resp, err)
	}
	if w.Requests() != 2 {
		t.Errorf("Requests() = %d, want 2", w.Requests())
	}

	w.Stop()
	client.CloseIdleConnections()
	if _, err := post(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("after Stop: error %v, want connection refused", err)
	}
}

func TestWebhookConfiguration(t *testing.T) {
	env := &Env{Namespace: "upgrade-abcde"}
	w := &Webhook{URL: "https://127.0.0.1:1234/validate", CABundle: []byte("ca")}
	rule := Rule([]admissionregistrationv1.OperationType{admissionregistrationv1.Create}, []string{"batch"}, []string{"v1"}, []string{"jobs"})
	cfg := env.webhookConfiguration(w, WebhookOptions{Rules: []admissionregistrationv1.RuleWithOperations{rule}})

	if cfg.Name != "upgrade-abcde-check-webhook-berth-dev" {
		t.Errorf("name = %q", cfg.Name)
	}
	if len(cfg.Webhooks) != 2 {
		t.Fatalf("%d webhooks, want the webhook and its probe", len(cfg.Webhooks))
	}
	wh, probe := cfg.Webhooks[0], cfg.Webhooks[1]
	if wh.Name != "check.webhook.berth.dev" || *wh.FailurePolicy != admissionregistrationv1.Fail || *wh.TimeoutSeconds != 10 {
		t.Errorf("defaults: name %q failurePolicy %s timeout %d", wh.Name, *wh.FailurePolicy, *wh.TimeoutSeconds)
	}
	if *wh.ClientConfig.URL != w.URL || string(wh.ClientConfig.CABundle) != "ca" {
		t.Errorf("clientConfig = %+v", wh.ClientConfig)
	}
	if *probe.ClientConfig.URL != "https://127.0.0.1:1234/probe" {
		t.Errorf("probe URL = %s", *probe.ClientConfig.URL)
	}
	for _, h := range cfg.Webhooks {
		if got := h.NamespaceSelector.MatchLabels[corev1.LabelMetadataName]; got != env.Namespace {
			t.Errorf("%s: namespaceSelector selects %q, want %q", h.Name, got, env.Namespace)
		}
	}
	if sel := wh.ObjectSelector; len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Key != probeLabel ||
		sel.MatchExpressions[0].Operator != metav1.LabelSelectorOpDoesNotExist {
		t.Errorf("webhook objectSelector %+v does not exclude probes", sel)
	}
	if got := probe.ObjectSelector.MatchLabels[probeLabel]; got != probeID(cfg.Name) || len(got) > 63 {
		t.Errorf("probe objectSelector selects %q, want %q (a label value)", got, probeID(cfg.Name))
	}

	cfg = env.webhookConfiguration(w, WebhookOptions{
		Name:           "deny.jobs.example.com",
		FailurePolicy:  admissionregistrationv1.Ignore,
		TimeoutSeconds: 2,
	})
	wh = cfg.Webhooks[0]
	if wh.Name != "deny.jobs.example.com" || *wh.FailurePolicy != admissionregistrationv1.Ignore || *wh.TimeoutSeconds != 2 {
		t.Errorf("options: name %q failurePolicy %s timeout %d", wh.Name, *wh.FailurePolicy, *wh.TimeoutSeconds)
	}
}
