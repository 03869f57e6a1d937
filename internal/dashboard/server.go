// Package dashboard serves berth's web view of the releases of every kube context a kubeconfig
// names: Helm's records (whoever wrote them) and the controller's Release objects, each release's
// history, diffs between revisions and against the cluster, its live objects with what holds
// them, its hooks, an operation under way or interrupted, and berth doctor's findings; with
// actions allowed, a rollback, an uninstall or a retry, each after its plan was shown.
//
// It acts only with the credentials of the kubeconfig it was given, so it shows what that user may
// see, and it is a second front end beside the CLI: it turns results and errors into words on the
// page. Its pages are embedded in the binary; they follow the cluster through a stream of events
// (server-sent events) fed by watches.
package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/release"
)

//go:embed assets
var assets embed.FS

// Options configure a dashboard.
type Options struct {
	// Flags select the kubeconfig and its credentials; each request names its context, which
	// replaces Flags.Context. Flags.Namespace is not used: pages name their namespaces.
	Flags kube.Flags
	// Contexts are the contexts of the kubeconfig, in the order the switcher shows them, and
	// Current the one shown first.
	Contexts []string
	Current  string
	// Driver is the storage driver of release records (HELM_DRIVER).
	Driver release.Driver
	// AllowActions allows rollback, uninstall and retry; without it the pages only read.
	AllowActions bool
	// RevealSecrets shows the values of Secrets and of encrypted values files; without it each
	// is masked.
	RevealSecrets bool
	// Holder names who runs the operations the dashboard's actions start (their lease and journal).
	Holder string
	// RequestTimeout bounds each request of a page; an action has its own Timeout.
	RequestTimeout time.Duration
	// ActionTimeout bounds a rollback or uninstall, as an operation's timeout does.
	ActionTimeout time.Duration
}

// DefaultRequestTimeout bounds what one request of a page reads from the cluster.
const DefaultRequestTimeout = 30 * time.Second

// DefaultActionTimeout is Helm's five minutes for an operation.
const DefaultActionTimeout = 5 * time.Minute

// Server is a dashboard: an http.Handler for the address it was given.
type Server struct {
	opts Options
	// token must come with every request that changes something (X-Berth-Token): only the pages
	// this server served know it.
	token string
	// hosts are the Host headers the server answers: its own address, so that a page of another
	// site that resolves its name to 127.0.0.1 (DNS rebinding) is refused.
	hosts []string
	mux   *http.ServeMux

	mu      sync.Mutex
	clients map[string]*kube.Clients
}

// New returns the dashboard for opts, to be served at addr (host:port, the address the browser
// uses).
func New(opts Options, addr string) (*Server, error) {
	if len(opts.Contexts) == 0 {
		return nil, &NoContextError{}
	}
	if opts.Current == "" || !slices.Contains(opts.Contexts, opts.Current) {
		opts.Current = opts.Contexts[0]
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.ActionTimeout <= 0 {
		opts.ActionTimeout = DefaultActionTimeout
	}
	if opts.Driver == "" {
		opts.Driver = release.DriverSecret
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	s := &Server{opts: opts, token: hex.EncodeToString(b), hosts: hostsOf(addr), clients: map[string]*kube.Clients{}}
	s.routes()
	return s, nil
}

// NoContextError says the kubeconfig names no context to show.
type NoContextError struct{}

func (*NoContextError) Error() string { return "the kubeconfig names no context" }

// hostsOf are the Host headers a server at addr answers: addr itself, and for a loopback
// address its other loopback names.
func hostsOf(addr string) []string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return []string{addr}
	}
	hosts := []string{addr}
	if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
		for _, h := range []string{"127.0.0.1", "localhost", "[::1]"} {
			hosts = append(hosts, h+":"+port)
		}
	}
	return hosts
}

func (s *Server) routes() {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServer(http.FS(static))
	mux.Handle("GET /static/", http.StripPrefix("/static/", files))
	mux.HandleFunc("GET /{$}", s.index)
	mux.HandleFunc("GET /api/config", s.config)
	mux.HandleFunc("GET /api/releases", s.api(s.releases))
	mux.HandleFunc("GET /api/health", s.api(s.health))
	mux.HandleFunc("GET /api/release", s.api(s.release))
	mux.HandleFunc("GET /api/diff", s.api(s.diff))
	mux.HandleFunc("GET /api/doctor", s.api(s.doctor))
	mux.HandleFunc("GET /api/live", s.api(s.releaseObjects))
	mux.HandleFunc("GET /api/controller/releases", s.api(s.controllerReleases))
	mux.HandleFunc("GET /api/controller/release", s.api(s.releaseObject))
	mux.HandleFunc("GET /api/events", s.events)
	mux.HandleFunc("POST /api/plan", s.api(s.plan))
	mux.HandleFunc("POST /api/rollback", s.api(s.rollback))
	mux.HandleFunc("POST /api/uninstall", s.api(s.uninstall))
	mux.HandleFunc("POST /api/retry", s.api(s.retry))
	s.mux = mux
}

// ServeHTTP answers only requests for the server's own address, and only changes anything for a
// page it served: a request that changes something must carry the server's token and come from
// the same origin.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !slices.Contains(s.hosts, r.Host) {
		http.Error(w, "unknown host "+r.Host+": open the address berth dashboard printed", http.StatusMisdirectedRequest)
		return
	}
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'none'")
	h.Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if err := s.checkWrite(r); err != nil {
			writeError(w, http.StatusForbidden, err)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// CrossSiteError refuses a request that changes something and does not come from a page of the
// dashboard.
type CrossSiteError struct{ Reason string }

func (e *CrossSiteError) Error() string {
	return "refused: " + e.Reason + "; actions are taken only from the dashboard's own pages"
}

// checkWrite refuses a request that changes something unless it comes from a page this server
// served: its token, the same origin, and JSON (which a form of another site cannot send
// without a preflight).
func (s *Server) checkWrite(r *http.Request) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return &CrossSiteError{Reason: "the request came from another site (" + site + ")"}
	}
	if origin := r.Header.Get("Origin"); origin != "" && !slices.Contains(s.origins(), origin) {
		return &CrossSiteError{Reason: "the request came from " + origin}
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("X-Berth-Token")), []byte(s.token)) != 1 {
		return &CrossSiteError{Reason: "the request does not carry the dashboard's token"}
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return &CrossSiteError{Reason: "the request is not JSON"}
	}
	return nil
}

func (s *Server) origins() []string {
	out := make([]string, len(s.hosts))
	for i, h := range s.hosts {
		out[i] = "http://" + h
	}
	return out
}

// index serves the page, with the server's token for the requests that change something.
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	page, err := assets.ReadFile("assets/index.html")
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(strings.Replace(string(page), "{{TOKEN}}", s.token, 1)))
}

// configView is what a page needs to know of the server.
type configView struct {
	Contexts      []string `json:"contexts"`
	Current       string   `json:"current"`
	AllowActions  bool     `json:"allowActions"`
	RevealSecrets bool     `json:"revealSecrets"`
}

func (s *Server) config(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, configView{Contexts: s.opts.Contexts, Current: s.opts.Current, AllowActions: s.opts.AllowActions, RevealSecrets: s.opts.RevealSecrets})
}

// request is one request of a page: its context's clients, within the request's deadline.
type request struct {
	*http.Request
	ctx     context.Context
	clients *kube.Clients
	context string
}

// api adapts a handler that returns a value (written as JSON) or an error (written with the
// status it calls for) to http.
func (s *Server) api(h func(*request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		timeout := s.opts.RequestTimeout
		if r.Method == http.MethodPost && !strings.HasSuffix(r.URL.Path, "/plan") {
			timeout = s.opts.ActionTimeout
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		name := s.contextOf(r)
		clients, err := s.clientsOf(name)
		if err != nil {
			writeError(w, statusOf(err), err)
			return
		}
		v, err := h(&request{Request: r.WithContext(ctx), ctx: ctx, clients: clients, context: name})
		if err != nil {
			writeError(w, statusOf(err), err)
			return
		}
		writeJSON(w, v)
	}
}

// contextOf is the context a request names, the current one when it names none.
func (s *Server) contextOf(r *http.Request) string {
	if name := r.URL.Query().Get("context"); name != "" {
		return name
	}
	return s.opts.Current
}

// UnknownContextError names a context the kubeconfig does not have.
type UnknownContextError struct{ Name string }

func (e *UnknownContextError) Error() string {
	return fmt.Sprintf("context %q is not in the kubeconfig", e.Name)
}

// clientsOf returns the clients of the kubeconfig's context name, built once.
func (s *Server) clientsOf(name string) (*kube.Clients, error) {
	if !slices.Contains(s.opts.Contexts, name) {
		return nil, &UnknownContextError{Name: name}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.clients[name]; c != nil {
		return c, nil
	}
	flags := s.opts.Flags
	flags.Context, flags.Namespace = name, ""
	c, err := flags.Load()
	if err != nil {
		return nil, err
	}
	s.clients[name] = c
	return c, nil
}

// InputError is a request a page should not have made: a missing or malformed parameter.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

// ActionsOffError refuses an action of a dashboard whose actions are off (Options.AllowActions).
type ActionsOffError struct{}

func (*ActionsOffError) Error() string {
	return "actions are off in this dashboard: it only reads"
}

// errorView is how an error reaches a page: its message, and the API server's reason when it
// refused the request (Forbidden, NotFound…).
type errorView struct {
	Error  string `json:"error"`
	Reason string `json:"reason,omitempty"`
	// Blockers are what blocked an operation, named.
	Blockers any `json:"blockers,omitempty"`
}

func writeError(w http.ResponseWriter, status int, err error) {
	v := errorView{Error: err.Error(), Reason: reasonOf(err), Blockers: blockersOf(err)}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil && !errors.Is(err, context.Canceled) {
		// The status is written already; the page sees a truncated answer.
		return
	}
}
