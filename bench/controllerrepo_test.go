package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseControllerFlags(t *testing.T) {
	cfg, err := parseControllerFlags([]string{"--releases", "10", "--hung", "3", "--interval", "1m", "--steady", "70s"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.hung != 3 || cfg.interval != "1m" || cfg.steady != 70*time.Second || !cmp.Equal(cfg.releases, []int{10}) {
		t.Errorf("got hung %d, interval %q, steady %s, releases %v", cfg.hung, cfg.interval, cfg.steady, cfg.releases)
	}
	def, err := parseControllerFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if def.hung != 0 || def.interval != "" || def.steady != time.Minute {
		t.Errorf("defaults: hung %d, interval %q, steady %s", def.hung, def.interval, def.steady)
	}
	for _, args := range [][]string{
		{"--hung", "-1"},
		{"--interval", "5s"}, // below the CRD's 10s
		{"--interval", "soon"},
		{"--releases", "0"},
		{"extra"},
	} {
		if _, err := parseControllerFlags(args); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

func TestClassifyRepoRequest(t *testing.T) {
	tests := []struct {
		method, path string
		status       int
		want         repoRequest
	}{
		{"GET", "/index.yaml", 200, indexDownload},
		{"GET", "/app-1.0.0.tgz", 200, chartDownload},
		{"GET", "/index.yaml", 304, revalidation},
		{"GET", "/app-1.0.0.tgz", 304, revalidation},
		{"HEAD", "/index.yaml", 200, otherRequest},
		{"GET", "/missing.tgz", 404, otherRequest},
		{"GET", "/", 200, otherRequest},
	}
	for _, tt := range tests {
		if got := classifyRepoRequest(tt.method, tt.path, tt.status); got != tt.want {
			t.Errorf("%s %s %d: %d, want %d", tt.method, tt.path, tt.status, got, tt.want)
		}
	}
}

func TestRepoCounter(t *testing.T) {
	c := &repoCounter{}
	h := c.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/index.yaml":
			if r.Header.Get("If-None-Match") != "" {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Write([]byte("apiVersion: v1\n")) // an implicit 200
		case "/app-1.0.0.tgz":
			w.WriteHeader(http.StatusOK)
		default:
			http.NotFound(w, r)
		}
	}))
	serve := func(path string, revalidate bool) {
		r := httptest.NewRequest("GET", path, nil)
		if revalidate {
			r.Header.Set("If-None-Match", `"x"`)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	serve("/index.yaml", false)
	before := c.snapshot()
	serve("/index.yaml", false)
	serve("/index.yaml", true)
	serve("/index.yaml", true)
	serve("/app-1.0.0.tgz", false)
	serve("/nope", false)
	want := repoCounts{otherRequest: 1, indexDownload: 1, chartDownload: 1, revalidation: 2}
	if diff := cmp.Diff(want, c.snapshot().sub(before)); diff != "" {
		t.Errorf("counts since the snapshot (-want +got):\n%s", diff)
	}
	if c.total() != 6 {
		t.Errorf("total = %d, want 6", c.total())
	}
	c.reset()
	if c.total() != 0 {
		t.Errorf("total after reset = %d", c.total())
	}
}

func TestServeHung(t *testing.T) {
	url, stop, err := serveHung()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", url[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("GET /index.yaml HTTP/1.1\r\nHost: x\r\n\r\n"))
	conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := conn.Read(make([]byte, 1)); err == nil || n > 0 {
		t.Errorf("the hung repository answered: %d bytes, %v", n, err)
	}
	stop()
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Error("the connection is still open after stop")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Error("the connection is still open after stop (read timed out)")
	}
}

func TestCountReleases(t *testing.T) {
	ready := map[string]bool{"tenant-0000/app": true, "tenant-0001/app": false, "hung-0000/app": false, "hung-0001/app": true}
	if got, want := countReleases(ready), (releaseCounts{All: 4, Measured: 2, Ready: 1}); got != want {
		t.Errorf("countReleases = %+v, want %+v", got, want)
	}
}

func TestReleaseWatchCountsAsItChanges(t *testing.T) {
	rw := &releaseWatch{ready: map[string]bool{}}
	steps := []func(){
		func() { rw.put("tenant-0000/app", false) },
		func() { rw.put("hung-0000/app", false) },
		func() { rw.put("tenant-0001/app", true) },
		func() { rw.put("tenant-0000/app", true) },
		func() { rw.put("tenant-0000/app", true) },
		func() { rw.put("tenant-0001/app", false) },
		func() { rw.remove("hung-0000/app") },
		func() { rw.remove("tenant-0000/app") },
		func() { rw.remove("tenant-0000/app") },
		func() { rw.remove("tenant-0001/app") },
	}
	for i, step := range steps {
		step()
		if got, want := rw.counts, countReleases(rw.ready); got != want {
			t.Errorf("after step %d: counts %+v, want %+v", i, got, want)
		}
	}
	if rw.counts != (releaseCounts{}) {
		t.Errorf("after every Release is gone: %+v", rw.counts)
	}
}

func TestHungWrites(t *testing.T) {
	byGroup := map[string]int{"patch hung": 3, "create hung": 1, "get hung": 7, "patch measured": 2, "list measured": 1}
	if got := hungWrites(byGroup); got != 4 {
		t.Errorf("hungWrites = %d, want 4", got)
	}
	ev := auditEvent{Verb: "patch"}
	if got := byVerbAndGroup(ev); got != "patch measured" {
		t.Errorf("no object: %q", got)
	}
	ev.ObjectRef = &auditObject{Resource: "releases", Namespace: "hung-0002"}
	if got := byVerbAndGroup(ev); got != "patch hung" {
		t.Errorf("hung namespace: %q", got)
	}
}

func TestReleaseObject(t *testing.T) {
	got := releaseObject("hung-0001", "http://127.0.0.1:1", releaseOptions{interval: "1m", timeout: "20s"}).Object["spec"]
	want := map[string]any{
		"serviceAccountName": deployer,
		"chart":              map[string]any{"repository": "http://127.0.0.1:1", "name": "app", "version": "1.0.0"},
		"interval":           "1m",
		"timeout":            "20s",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	plain := releaseObject("tenant-0000", "http://x", releaseOptions{}).Object["spec"].(map[string]any)
	if _, ok := plain["interval"]; ok {
		t.Error("interval set without one asked")
	}
}
