package main

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// hungTimeout is the spec.timeout of the Releases on the chart repository that never answers.
const hungTimeout = "20s"

// repoRequest is a kind of request the chart repository answered.
type repoRequest int

const (
	otherRequest  repoRequest = iota
	indexDownload             // GET …/index.yaml answered 200
	chartDownload             // GET ….tgz answered 200
	revalidation              // any request answered 304 Not Modified
	repoRequestKinds
)

// classifyRepoRequest says what kind of request the chart repository answered with status.
func classifyRepoRequest(method, path string, status int) repoRequest {
	switch {
	case status == http.StatusNotModified:
		return revalidation
	case method != http.MethodGet || status != http.StatusOK:
		return otherRequest
	case strings.HasSuffix(path, "/index.yaml"):
		return indexDownload
	case strings.HasSuffix(path, ".tgz"):
		return chartDownload
	}
	return otherRequest
}

// repoCounts are the chart repository's answers by kind.
type repoCounts [repoRequestKinds]int

// sub is c less an earlier snapshot.
func (c repoCounts) sub(earlier repoCounts) repoCounts {
	for i := range c {
		c[i] -= earlier[i]
	}
	return c
}

// repoCounter counts the requests a handler answered, by kind.
type repoCounter struct {
	counts [repoRequestKinds]atomic.Int64
}

// wrap counts the requests h answers.
func (c *repoCounter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		c.counts[classifyRepoRequest(r.Method, r.URL.Path, sw.status)].Add(1)
	})
}

func (c *repoCounter) snapshot() repoCounts {
	var out repoCounts
	for i := range c.counts {
		out[i] = int(c.counts[i].Load())
	}
	return out
}

// total is how many requests were answered, whatever their kind.
func (c *repoCounter) total() int {
	n := 0
	for _, v := range c.snapshot() {
		n += v
	}
	return n
}

func (c *repoCounter) reset() {
	for i := range c.counts {
		c.counts[i].Store(0)
	}
}

// statusWriter records the status code a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

// serveHung listens on localhost and accepts connections without ever answering on them: a
// chart repository that hangs. close stops listening and closes every connection.
func serveHung() (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return "http://" + ln.Addr().String(), func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}, nil
}

// byVerbAndGroup keys a request by its verb and whether its namespace is a hung Release's:
// "patch hung" or "patch measured".
func byVerbAndGroup(ev auditEvent) string {
	if ev.ObjectRef != nil && strings.HasPrefix(ev.ObjectRef.Namespace, hungPrefix+"-") {
		return ev.Verb + " hung"
	}
	return ev.Verb + " measured"
}

// hungWrites counts the writes of the hung Releases' namespaces among requests keyed by
// byVerbAndGroup.
func hungWrites(byGroup map[string]int) int {
	n := 0
	for k, c := range byGroup {
		verb, group, _ := strings.Cut(k, " ")
		if group == "hung" && isWrite(verb) {
			n += c
		}
	}
	return n
}
