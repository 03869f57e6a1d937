package berthtest_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berthdev/berth/test/berthtest"
)

// clickPage changes #status when #go is clicked, and reports a console error and an exception
// when #fail is.
const clickPage = `<!doctype html>
<title>berthtest</title>
<p id="status">waiting</p>
<button id="go" onclick="document.getElementById('status').textContent = 'released ' + document.getElementById('name').value">Go</button>
<input id="name" value="old">
<button id="fail" onclick="console.error('lost', 42); throw new Error('boom')">Fail</button>
`

func servePage(t *testing.T, html string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(html))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestBrowserWaitTextSeesClick(t *testing.T) {
	t.Parallel()
	p := berthtest.Browser(t)
	p.Navigate(servePage(t, clickPage))
	p.WaitVisible("#go")
	if got := p.Text("#status"); got != "waiting" {
		t.Fatalf("status before the click: %q, want %q", got, "waiting")
	}
	p.Type("#name", "podinfo")
	p.Click("#go")
	p.WaitText("#status", "released podinfo")
	var title string
	p.Eval(`document.title`, &title)
	if title != "berthtest" {
		t.Errorf("document.title: %q, want %q", title, "berthtest")
	}
	if errs := p.JSErrors(); len(errs) != 0 {
		t.Errorf("the page raised errors: %q", errs)
	}
}

func TestBrowserJSErrors(t *testing.T) {
	t.Parallel()
	p := berthtest.Browser(t)
	p.Navigate(servePage(t, clickPage))
	p.Click("#fail")
	// The click's reply comes from the browser, the page's errors from its renderer: a round
	// trip to the renderer makes sure they have arrived.
	p.Eval(`0`, nil)
	errs := p.JSErrors()
	if len(errs) != 2 || errs[0] != "console.error: lost 42" || !strings.HasPrefix(errs[1], "Uncaught Error: boom") {
		t.Errorf("JSErrors: %q, want console.error: lost 42 and Uncaught Error: boom", errs)
	}
}

func TestBrowserScreenshot(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BERTH_ARTIFACTS", dir)
	p := berthtest.Browser(t)
	p.Navigate(servePage(t, clickPage))
	path := p.Screenshot("page")
	if want := filepath.Join(dir, "TestBrowserScreenshot", "page.png"); path != want {
		t.Errorf("screenshot path: %s, want %s", path, want)
	}
	png, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("%s is not a PNG: it starts with %q", path, png[:min(len(png), 8)])
	}
}
