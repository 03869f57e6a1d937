package kube

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// The limits of what a server another party names (a Release's kubeconfig) may answer.
const (
	// MaxAnswer bounds the body of an answer that is not a stream, and each event of a watch: a
	// list of many objects fits (an object is at most 1.5 MiB in etcd), and four workers each
	// holding one stay far under the controller's memory limit.
	MaxAnswer = 16 << 20
	// MaxVersionAnswer bounds the answer to /version, asked before every reconcile: a real one is
	// a few hundred bytes.
	MaxVersionAnswer = 64 << 10
	// maxErrorAnswer bounds what is read of an answer that is not a success, to tell a
	// Kubernetes Status from anything else.
	maxErrorAnswer = 64 << 10
	// maxStatusMessage and maxStatusCauses bound what is kept of a Status.
	maxStatusMessage = 4 << 10
	maxStatusCauses  = 16
)

// AnswerTooLargeError is an answer of a server longer than the limit put on it: it is not read
// further.
type AnswerTooLargeError struct {
	// Host is the server's host (and port).
	Host string
	// Limit is the limit, in bytes, of the answer (of one event, for a watch).
	Limit int64
}

func (e *AnswerTooLargeError) Error() string {
	return fmt.Sprintf("the answer of server %s is longer than %s, the limit of its answers: not read further", e.Host, sizeOf(e.Limit))
}

// sizeOf writes n bytes in the largest binary unit that divides it.
func sizeOf(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// GuardAnswers makes what cfg's clients read of their server bounded and free of anything the
// server wrote but a Kubernetes Status, for a server another party names:
//
//   - the body of an answer is cut at MaxAnswer (MaxVersionAnswer for /version), each event of
//     a JSON watch at MaxAnswer; beyond, reading it fails with an *AnswerTooLargeError. A
//     followed log or an upgraded connection is left to its reader, which reads it line by line.
//   - an answer that is not a success keeps only its status code, and, when it is a Kubernetes
//     Status, the fields of one (status, message, reason, details, code), cut: anything else
//     becomes a fixed sentence naming the host and the code.
//   - a redirection is not followed: it is an answer that is not a success.
//
// /version is recognised under the path prefix of cfg's server, if it has one (a server
// https://host/prefix is asked /prefix/version).
func GuardAnswers(cfg *rest.Config) {
	version := versionPath(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &answerGuard{next: rt, version: version} })
}

// versionPath is the path at which cfg's clients ask their server's version: /version under the
// path of cfg's host.
func versionPath(cfg *rest.Config) string {
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return "/version"
	}
	return path.Join("/", base.Path, "version")
}

type answerGuard struct {
	next    http.RoundTripper
	version string // the path of /version, under the server's path prefix
}

// WrappedRoundTripper lets client-go see through the wrap.
func (t *answerGuard) WrappedRoundTripper() http.RoundTripper { return t.next }

func (t *answerGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode == http.StatusSwitchingProtocols {
		return resp, err
	}
	host := req.URL.Host
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return errorAnswer(resp, host), nil
	}
	q := req.URL.Query()
	if q.Get("follow") == "true" {
		return resp, nil
	}
	limit := int64(MaxAnswer)
	if p := path.Clean("/" + req.URL.Path); p == t.version || p == "/version" {
		limit = MaxVersionAnswer
	}
	watch := q.Get("watch") == "true" || q.Get("watch") == "1" || strings.Contains(req.URL.Path, "/watch/")
	switch {
	case watch && mediaType(resp) == "application/json":
		resp.Body = &eventBound{body: resp.Body, host: host, limit: limit}
	case watch && mediaType(resp) == "application/vnd.kubernetes.protobuf":
		// Length-delimited frames: client-go reads each into a buffer of at most 16 MiB.
	default:
		if resp.ContentLength > limit {
			resp.Body.Close()
			resp.Body = io.NopCloser(&failing{err: &AnswerTooLargeError{Host: host, Limit: limit}})
			break
		}
		resp.Body = &bodyBound{body: resp.Body, host: host, limit: limit}
	}
	return resp, nil
}

func mediaType(resp *http.Response) string {
	t, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return t
}

// errorAnswer is resp, an answer that is not a success, with only what GuardAnswers keeps of it.
func errorAnswer(resp *http.Response, host string) *http.Response {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorAnswer+1))
	resp.Body.Close()
	body, ctype := []byte(nil), ""
	if err == nil && len(data) <= maxErrorAnswer && mediaType(resp) == "application/json" {
		body = statusOf(data, resp.StatusCode)
		ctype = "application/json"
	}
	if body == nil {
		body = []byte(fmt.Sprintf("server %s answered %d %s", host, resp.StatusCode, http.StatusText(resp.StatusCode)))
		ctype = "text/plain; charset=utf-8"
	}
	keep := http.Header{"Content-Type": {ctype}}
	if v := resp.Header.Get("Retry-After"); v != "" && len(v) < 32 {
		keep.Set("Retry-After", v)
	}
	resp.Header = keep
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", fmt.Sprint(len(body)))
	resp.TransferEncoding = nil
	return resp
}

// statusOf is the JSON of data when it is a Kubernetes Status, with only the fields of one, its
// texts cut, and code; nil when it is not one.
func statusOf(data []byte, code int) []byte {
	var s metav1.Status
	if err := json.Unmarshal(data, &s); err != nil || s.Kind != "Status" || s.APIVersion != "v1" {
		return nil
	}
	out := metav1.Status{
		TypeMeta: s.TypeMeta, Status: s.Status, Message: cut(s.Message, maxStatusMessage), Reason: s.Reason, Code: int32(code),
	}
	if d := s.Details; d != nil {
		out.Details = &metav1.StatusDetails{Name: cut(d.Name, 253), Group: cut(d.Group, 253), Kind: cut(d.Kind, 63), RetryAfterSeconds: d.RetryAfterSeconds}
		for i, c := range d.Causes {
			if i == maxStatusCauses {
				break
			}
			out.Details.Causes = append(out.Details.Causes, metav1.StatusCause{Type: metav1.CauseType(cut(string(c.Type), 63)), Message: cut(c.Message, 1<<10), Field: cut(c.Field, 253)})
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	return b
}

// cut is s, at most n bytes of it, on a rune's start.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// failing is a reader that fails with err.
type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }

// bodyBound fails once more than limit bytes of body are read.
type bodyBound struct {
	body  io.ReadCloser
	host  string
	limit int64
	read  int64
}

func (b *bodyBound) Read(p []byte) (int, error) {
	if b.read > b.limit {
		return 0, &AnswerTooLargeError{Host: b.host, Limit: b.limit}
	}
	if left := b.limit + 1 - b.read; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.body.Read(p)
	b.read += int64(n)
	if b.read > b.limit {
		return n, &AnswerTooLargeError{Host: b.host, Limit: b.limit}
	}
	return n, err
}

func (b *bodyBound) Close() error { return b.body.Close() }

// eventBound fails once one JSON value of a stream of them (the events of a watch) passes limit
// bytes. It follows the JSON's nesting and strings, not its lines.
type eventBound struct {
	body  io.ReadCloser
	host  string
	limit int64
	// size is the length of the value being read; depth its nesting.
	size             int64
	depth            int
	inString, escape bool
}

func (b *eventBound) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	for _, c := range p[:n] {
		b.size++
		switch {
		case b.inString && b.escape:
			b.escape = false
		case b.inString && c == '\\':
			b.escape = true
		case b.inString && c == '"':
			b.inString = false
		case b.inString:
		case c == '"':
			b.inString = true
		case c == '{' || c == '[':
			b.depth++
		case c == '}' || c == ']':
			b.depth--
			if b.depth <= 0 {
				b.depth, b.size = 0, 0 // one value ended
			}
		case b.depth == 0 && (c == ' ' || c == '\n' || c == '\r' || c == '\t'):
			b.size = 0
		}
		if b.size > b.limit {
			return 0, &AnswerTooLargeError{Host: b.host, Limit: b.limit}
		}
	}
	return n, err
}

func (b *eventBound) Close() error { return b.body.Close() }
