package berthtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/berthdev/berth/internal/testenv"
)

// BrowserTimeout bounds each action of a Page (a navigation, a wait, a click) and the start of the
// browser: a page that never shows what a test waits for fails the test after it, never hangs it.
const BrowserTimeout = 30 * time.Second

// screenWidth and screenHeight are a laptop's screen, the size of the browser's window and of each
// tab's viewport.
const screenWidth, screenHeight = 1440, 900

// browserNames are the names Debian's and other distributions' Chromium packages put on PATH, in
// the order Browser looks for them when BERTH_CHROMIUM is not set.
var browserNames = []string{"chromium", "chromium-browser"}

// Page is one tab of a headless Chromium, for the tests of berth's web dashboard. Its methods
// fail the test when an action fails or times out; selectors are CSS selectors, and an action on
// a selector acts on the first element that matches it.
type Page struct {
	t   testing.TB
	ctx context.Context // the tab's: cancelling it closes the tab

	mu       sync.Mutex
	jsErrors []string
}

// Browser opens a new tab in a headless Chromium and returns it; the tab is closed when the test
// ends. The tests of one test binary that run at the same time share one browser, each in its own
// tab, and the browser stops when the last of them ends.
//
// The browser is BERTH_CHROMIUM when that is set (a path, or a name on PATH), else chromium or
// chromium-browser on PATH. Without one, Browser fails the test saying how to install Debian's
// chromium package: make browser does.
//
// When the test fails, the page as it was is saved as failure.png beside the test's screenshots
// (see Screenshot).
func Browser(t testing.TB) *Page {
	t.Helper()
	b := acquireBrowser(t)
	p := &Page{t: t}
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithListener(p.listen))
	p.ctx = ctx
	t.Cleanup(func() {
		cancel()
		releaseBrowser(b)
	})
	// The first Do opens the tab, with a viewport of the screen's size (the window's size counts its
	// frame), and ties the tab to the context it gets: it is bounded by a timer, not by a deadline
	// on that context.
	timer := time.AfterFunc(BrowserTimeout, cancel)
	err := chromedp.Do(ctx, chromedp.EmulateViewport(screenWidth, screenHeight))
	if !timer.Stop() {
		t.Fatalf("browser: open a tab: no answer after %s: %v", BrowserTimeout, err)
	}
	if err != nil {
		t.Fatalf("browser: open a tab: %v", err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if path, err := p.screenshot("failure"); err != nil {
			t.Logf("browser: screenshot of the failed test: %v", err)
		} else {
			t.Logf("browser: the page when the test failed: %s", path)
		}
	})
	return p
}

// Navigate loads url in the tab and waits for its load event.
func (p *Page) Navigate(url string) {
	p.t.Helper()
	p.do("navigate to "+url, chromedp.Navigate(url))
}

// WaitVisible waits until an element matching selector is shown on the page.
func (p *Page) WaitVisible(selector string) {
	p.t.Helper()
	p.do(fmt.Sprintf("wait for %q to be visible", selector), chromedp.WaitVisible(chromedp.CSS(selector)))
}

// WaitText waits until the text content of the element matching selector contains substring.
// When it times out, the test fails showing the element's text then, or that nothing matched.
func (p *Page) WaitText(selector, substring string) {
	p.t.Helper()
	type element struct {
		Found bool   `json:"found"`
		Text  string `json:"text"`
	}
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%s); return {found: e !== null, text: e === null ? "" : e.textContent}; })()`, quoteJS(selector))
	ctx, cancel := context.WithTimeout(p.ctx, BrowserTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last element
	var lastErr error
	for {
		// An evaluation can fail while the page navigates; the next tick tries again.
		e, err := chromedp.Run(ctx, chromedp.Evaluate[element](js))
		if err == nil {
			if e.Found && strings.Contains(e.Text, substring) {
				return
			}
			last, lastErr = e, nil
		} else if ctx.Err() == nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			switch {
			case lastErr != nil:
				p.fatalf("wait for %q to contain %q: %v", selector, substring, lastErr)
			case !last.Found:
				p.fatalf("wait for %q to contain %q: no element matches after %s", selector, substring, BrowserTimeout)
			default:
				p.fatalf("wait for %q to contain %q: its text after %s: %q", selector, substring, BrowserTimeout, last.Text)
			}
		case <-tick.C:
		}
	}
}

// Text returns the text content of the element matching selector, waiting for one to exist.
func (p *Page) Text(selector string) string {
	p.t.Helper()
	return pageRun(p, fmt.Sprintf("read the text of %q", selector), chromedp.TextContent(chromedp.CSS(selector)))
}

// Click clicks the element matching selector with the mouse, waiting for it to be visible.
func (p *Page) Click(selector string) {
	p.t.Helper()
	p.do(fmt.Sprintf("click %q", selector), chromedp.Click(chromedp.CSS(selector)))
}

// Type replaces the value of the input or textarea matching selector with text, typed key by
// key, so that the page sees the key and input events a person's typing gives.
func (p *Page) Type(selector, text string) {
	p.t.Helper()
	// Not chromedp.SetValue(sel, ""): it reports an empty value as one it could not set.
	clear := fmt.Sprintf(`document.querySelector(%s).value = ""`, quoteJS(selector))
	p.do(fmt.Sprintf("type into %q", selector),
		chromedp.WaitVisible(chromedp.CSS(selector)),
		chromedp.Evaluate[chromedp.Void](clear),
		chromedp.SendKeys(chromedp.CSS(selector), text))
}

// Eval evaluates the JavaScript expression js in the page, waits for it when it is a promise, and
// decodes its value, as JSON, into out; out may be nil to drop the value.
func (p *Page) Eval(js string, out any) {
	p.t.Helper()
	if out == nil {
		p.do("evaluate "+js, chromedp.Evaluate[chromedp.Void](js, chromedp.EvalAwaitPromise))
		return
	}
	raw := pageRun(p, "evaluate "+js, chromedp.Evaluate[[]byte](js, chromedp.EvalAwaitPromise))
	if err := json.Unmarshal(raw, out); err != nil {
		p.fatalf("evaluate %s: decode %s: %v", js, raw, err)
	}
}

// Screenshot saves a PNG of the whole page, beyond the window's height, as name.png in the test's
// artifacts directory, and returns its path. The directory is $BERTH_ARTIFACTS/<test name> when
// BERTH_ARTIFACTS is set, else bin/artifacts/<test name> in the repository; the test name is the
// test's, with every character but letters, digits, '.', '-' and '_' turned into '_'.
func (p *Page) Screenshot(name string) string {
	p.t.Helper()
	path, err := p.screenshot(name)
	if err != nil {
		p.fatalf("screenshot %s: %v", name, err)
	}
	return path
}

// JSErrors returns what the page reported as errors so far, in order: its uncaught exceptions and
// unhandled promise rejections, and its calls of console.error. A failed request is none of them.
func (p *Page) JSErrors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.jsErrors...)
}

func (p *Page) screenshot(name string) (string, error) {
	dir, err := artifactsDir(p.t)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(p.ctx, BrowserTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, sanitizeFileName(name)+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// listen records the page's errors. It runs in the tab's event loop, in the order the events
// arrive, so an error the page raised before an action's reply is recorded when the action returns.
func (p *Page) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg = exceptionText(ev.ExceptionDetails)
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError {
			return
		}
		msg = "console.error: " + argsText(ev.Args)
	default:
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.jsErrors = append(p.jsErrors, msg)
}

// do runs steps in the tab within BrowserTimeout and fails the test, saying what it was doing,
// when one fails.
func (p *Page) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, BrowserTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.fatalf("%s: %v", what, err)
	}
}

// pageRun runs the action in the page's tab within BrowserTimeout and returns its value; it fails the
// test, saying what it was doing, when the action fails. (A function: methods have no type
// parameters.)
func pageRun[T any](p *Page, what string, a chromedp.Action[T]) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, BrowserTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		p.fatalf("%s: %v", what, err)
	}
	return v
}

// fatalf fails the test with the page's errors so far, which often say why the page did not do
// what the test waited for.
func (p *Page) fatalf(format string, args ...any) {
	p.t.Helper()
	msg := "browser: " + fmt.Sprintf(format, args...)
	if errs := p.JSErrors(); len(errs) > 0 {
		msg += "\nthe page's errors:\n\t" + strings.Join(errs, "\n\t")
	}
	p.t.Fatal(msg)
}

// sharedBrowser is a running Chromium and the number of tests using it.
type sharedBrowser struct {
	ctx   context.Context // the browser's: a tab is a chromedp.NewContext of it
	close func()          // stops the browser and removes its profile
	users int
}

var browsers struct {
	mu      sync.Mutex
	current *sharedBrowser
}

// acquireBrowser returns the running browser, starting one when there is none, and counts the
// test as one of its users.
func acquireBrowser(t testing.TB) *sharedBrowser {
	t.Helper()
	browsers.mu.Lock()
	defer browsers.mu.Unlock()
	if browsers.current == nil {
		path, err := findBrowser()
		if err != nil {
			t.Fatal(err)
		}
		b, err := startBrowser(path)
		if err != nil {
			t.Fatalf("browser: start %s: %v", path, err)
		}
		browsers.current = b
	}
	browsers.current.users++
	return browsers.current
}

// releaseBrowser counts one user less of b and stops it when it was the last.
func releaseBrowser(b *sharedBrowser) {
	browsers.mu.Lock()
	defer browsers.mu.Unlock()
	if b.users--; b.users > 0 {
		return
	}
	b.close()
	browsers.current = nil
}

// findBrowser returns the path of the Chromium to run: BERTH_CHROMIUM, else the first of
// browserNames on PATH.
func findBrowser() (string, error) {
	const install = "install Debian's chromium package: make browser (apt-get install chromium)"
	if name := os.Getenv("BERTH_CHROMIUM"); name != "" {
		path, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("browser: BERTH_CHROMIUM=%s: %w; set it to a Chromium, or unset it and %s", name, err, install)
		}
		return path, nil
	}
	for _, name := range browserNames {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("browser: none of %s is on PATH and BERTH_CHROMIUM is not set: the dashboard's tests run in a real Chromium; %s",
		strings.Join(browserNames, ", "), install)
}

// startBrowser starts the Chromium at path headless, with a new empty profile, and waits within
// BrowserTimeout until it answers.
func startBrowser(path string) (*sharedBrowser, error) {
	profile, err := os.MkdirTemp("", "berth-chromium-")
	if err != nil {
		return nil, err
	}
	var output LockedBuffer
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(profile),
		chromedp.CombinedOutput(&output),
		chromedp.WindowSize(screenWidth, screenHeight),
		chromedp.NoSandbox, // CI runs the tests as root, where Chromium's sandbox refuses to start
		chromedp.DisableGPU,
		// Nothing but the page's own requests: the tests' machines have no network beyond
		// the loopback one, and a refused connection must not slow or fail a test.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	stop := func() {
		cancel()
		allocCancel() // waits for the browser's process to end
		os.RemoveAll(profile)
	}
	// The first Do starts the browser and ties it to the context it gets, so the start is
	// bounded by a timer, not by a deadline on that context.
	timer := time.AfterFunc(BrowserTimeout, allocCancel)
	err = chromedp.Do(ctx)
	timedOut := !timer.Stop()
	if err != nil {
		stop()
		if timedOut {
			err = fmt.Errorf("no answer after %s: %w", BrowserTimeout, err)
		}
		if out := strings.TrimSpace(output.String()); out != "" {
			err = fmt.Errorf("%w\nits output:\n%s", err, out)
		}
		return nil, err
	}
	return &sharedBrowser{ctx: ctx, close: stop}, nil
}

// artifactsDir returns the directory for the test's screenshots: $BERTH_ARTIFACTS/<test> or
// bin/artifacts/<test> in the repository.
func artifactsDir(t testing.TB) (string, error) {
	base := os.Getenv("BERTH_ARTIFACTS")
	if base == "" {
		root, err := testenv.RepoRoot()
		if err != nil {
			return "", err
		}
		base = filepath.Join(root, "bin", "artifacts")
	}
	return filepath.Join(base, sanitizeFileName(t.Name())), nil
}

// sanitizeFileName turns every character of s but ASCII letters, digits, '.', '-' and '_' into
// '_', so that a test's or a screenshot's name is one file name on every system.
func sanitizeFileName(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '-', c == '_':
		default:
			b[i] = '_'
		}
	}
	if s := string(b); s != "" && strings.Trim(s, ".") != "" {
		return s
	}
	return "_"
}

// exceptionText is an uncaught exception as the DevTools console shows it: "Uncaught" and the
// error's first line, with where it was thrown.
func exceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return "exception"
	}
	text := d.Text
	if d.Exception != nil {
		first, _, _ := strings.Cut(valueText(d.Exception), "\n")
		text += " " + first
	}
	if d.URL != "" {
		text += fmt.Sprintf(" (%s:%d:%d)", d.URL, d.LineNumber+1, d.ColumnNumber+1)
	}
	return text
}

// argsText joins the arguments of a console call as the DevTools console shows them.
func argsText(args []*runtime.RemoteObject) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = valueText(a)
	}
	return strings.Join(parts, " ")
}

// valueText is a string as it is and any other value as the browser describes it.
func valueText(o *runtime.RemoteObject) string {
	if o.Type == runtime.RemoteObjectTypeString {
		var s string
		if err := json.Unmarshal(o.Value, &s); err == nil {
			return s
		}
	}
	switch {
	case o.Description != "":
		return o.Description
	case o.UnserializableValue != "":
		return string(o.UnserializableValue)
	case len(o.Value) > 0:
		return string(o.Value)
	}
	return string(o.Type)
}

// quoteJS returns s as a JavaScript string literal.
func quoteJS(s string) string {
	b, _ := json.Marshal(s) // a Go string always marshals: invalid UTF-8 becomes U+FFFD
	return string(b)
}
