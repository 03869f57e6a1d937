package dashboard

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/kube"
)

func newTestServer(t *testing.T, allow bool) (*Server, string) {
	t.Helper()
	s, err := New(Options{Contexts: []string{"a", "b"}, Current: "b", AllowActions: allow}, "127.0.0.1:7741")
	if err != nil {
		t.Fatal(err)
	}
	return s, s.token
}

func do(s *Server, method, target, host string, header map[string]string, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Host = host
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

// TestRequestsOfOtherSitesAreRefused: only the server's own address is answered, and only a
// page it served, with its token, from its origin, in JSON, may change something.
func TestRequestsOfOtherSitesAreRefused(t *testing.T) {
	s, token := newTestServer(t, true)
	good := map[string]string{"X-Berth-Token": token, "Content-Type": "application/json", "Origin": "http://127.0.0.1:7741", "Sec-Fetch-Site": "same-origin"}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range good {
			h[a] = b
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	for _, tc := range []struct {
		name   string
		host   string
		header map[string]string
		want   string
	}{
		{"rebound host", "evil.example:7741", good, "unknown host"},
		{"no token", "127.0.0.1:7741", with("X-Berth-Token", ""), "token"},
		{"wrong token", "localhost:7741", with("X-Berth-Token", strings.Repeat("0", 64)), "token"},
		{"other origin", "127.0.0.1:7741", with("Origin", "http://evil.example"), "http://evil.example"},
		{"cross site", "127.0.0.1:7741", with("Sec-Fetch-Site", "cross-site"), "another site"},
		{"a form", "127.0.0.1:7741", with("Content-Type", "application/x-www-form-urlencoded"), "not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(s, http.MethodPost, "/api/uninstall?context=a", tc.host, tc.header, `{"action":"uninstall","namespace":"x","name":"y"}`)
			if rec.Code != http.StatusForbidden && rec.Code != http.StatusMisdirectedRequest {
				t.Fatalf("status %d, want a refusal: %s", rec.Code, rec.Body)
			}
			if !strings.Contains(rec.Body.String(), tc.want) {
				t.Errorf("refusal %q does not say %q", rec.Body, tc.want)
			}
		})
	}
	// The page carries the token; the configuration names the contexts.
	if rec := do(s, http.MethodGet, "/", "localhost:7741", nil, ""); !strings.Contains(rec.Body.String(), token) {
		t.Errorf("the page does not carry the token")
	}
	if rec := do(s, http.MethodGet, "/api/config", "127.0.0.1:7741", nil, ""); !strings.Contains(rec.Body.String(), `"current":"b"`) {
		t.Errorf("config: %s", rec.Body)
	}
	if rec := do(s, http.MethodGet, "/api/releases?context=nope", "127.0.0.1:7741", nil, ""); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `context \"nope\"`) {
		t.Errorf("an unknown context: %d %s", rec.Code, rec.Body)
	}
}

// TestActionsAreOffByDefault: without AllowActions, an action from the page itself is refused,
// and says how to allow it.
func TestActionsAreOffByDefault(t *testing.T) {
	s, token := newTestServer(t, false)
	s.clients["a"] = &kube.Clients{} // no cluster: the refusal comes before any request to one
	h := map[string]string{"X-Berth-Token": token, "Content-Type": "application/json"}
	for _, path := range []string{"/api/plan", "/api/rollback", "/api/uninstall", "/api/retry"} {
		rec := do(s, http.MethodPost, path+"?context=a", "127.0.0.1:7741", h, `{"action":"uninstall","namespace":"x","name":"y"}`)
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "actions are off") {
			t.Errorf("%s with actions off: %d %s", path, rec.Code, rec.Body)
		}
	}
}

func TestPaging(t *testing.T) {
	for _, tc := range []struct {
		offset, limit string
		o, l          int
		bad           bool
	}{
		{"", "", 0, DefaultPageSize, false},
		{"100", "25", 100, 25, false},
		{"-1", "", 0, 0, true},
		{"", "0", 0, 0, true},
		{"", "501", 0, 0, true},
		{"x", "", 0, 0, true},
	} {
		o, l, err := paging(tc.offset, tc.limit)
		if (err != nil) != tc.bad || (!tc.bad && (o != tc.o || l != tc.l)) {
			t.Errorf("paging(%q, %q) = %d, %d, %v", tc.offset, tc.limit, o, l, err)
		}
	}
}

// TestProject: a live object is compared on the fields the revision sets.
func TestProject(t *testing.T) {
	desired := map[string]any{"spec": map[string]any{"replicas": 1.0, "ports": []any{map[string]any{"port": 80.0}}}}
	live := map[string]any{"status": map[string]any{"ready": true}, "spec": map[string]any{"replicas": 3.0, "strategy": "x",
		"ports": []any{map[string]any{"port": 80.0, "protocol": "TCP"}}}}
	want := map[string]any{"spec": map[string]any{"replicas": 3.0, "ports": []any{map[string]any{"port": 80.0}}}}
	if got := project(live, desired); !reflect.DeepEqual(got, want) {
		t.Errorf("project = %v, want %v", got, want)
	}
}
