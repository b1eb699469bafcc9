// Package headless starts Debian's Chromium for the tests that look at
// kproxy's web page, driven through the DevTools protocol (chromedp). A
// missing browser fails the test with how to install it: the page's tests
// never skip silently (.ci/run installs chromium).
package headless

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Options tune the browser. The zero value is a 1400×800 window with the
// network reachable (loopback only in our tests).
type Options struct {
	// Offline points every host name and the proxy at nothing, so that a
	// page that needs the network shows it (Resources lists what it
	// loaded).
	Offline bool
	// Width and Height are the window's size; defaults 1400 and 800.
	Width, Height int
}

// Browser is one Chromium process with one tab.
type Browser struct {
	// Ctx runs chromedp actions in the tab; it is cancelled at the end of
	// the test.
	Ctx context.Context
}

// ExecPath is the Chromium binary: $CHROMIUM, else chromium or
// chromium-browser on PATH; "" when none is found.
func ExecPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Start starts Chromium headless with a fresh profile under t.TempDir and
// stops it when the test ends. It fails t when Chromium is not installed.
func Start(t testing.TB, o Options) *Browser {
	t.Helper()
	exe := ExecPath()
	if exe == "" {
		t.Fatal("chromium not found on PATH: install it (Debian: apt-get install -y chromium; .ci/run does) or set $CHROMIUM")
	}
	if o.Width == 0 {
		o.Width, o.Height = 1400, 800
	}
	flags := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")),
		chromedp.WindowSize(o.Width, o.Height),
	}
	if o.Offline {
		flags = append(flags,
			chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
			chromedp.ProxyServer("http://127.0.0.1:9"))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), flags...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first action starts the browser and binds it to the context it
	// runs with: ctx itself, not a child with a timeout, which would
	// close the browser when it ends.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium %s: %v", exe, err)
	}
	return &Browser{Ctx: ctx}
}

// Resources lists the URLs the page has loaded besides itself (scripts,
// styles, images, fetches), from the Resource Timing API.
func (b *Browser) Resources(t testing.TB) []string {
	t.Helper()
	return Eval[[]string](t, b, "performance.getEntriesByType('resource').map(e => e.name)")
}

// Run runs actions in the tab with a timeout, failing t on error.
func (b *Browser) Run(t testing.TB, timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("chromium: %v", err)
	}
}

// Eval evaluates a JavaScript expression in the tab and returns its value
// as T, failing t on error. An evaluation that meets a document being
// replaced (a navigation just done) is tried again.
func Eval[T any](t testing.TB, b *Browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 30*time.Second)
	defer cancel()
	for {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
		if err == nil {
			return v
		}
		if !transient(err) || ctx.Err() != nil {
			t.Fatalf("chromium: evaluate %s: %v", expr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// transient says whether err comes from a document going away under an
// evaluation: its execution context was destroyed or is not known yet.
func transient(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Cannot find context with specified id") ||
		strings.Contains(s, "Execution context was destroyed") ||
		strings.Contains(s, "Inspected target navigated or closed")
}

// WaitJS waits until the JavaScript expression is true, polling every
// 50 ms, and fails t with what after timeout.
func (b *Browser) WaitJS(t testing.TB, what, expr string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, timeout)
	defer cancel()
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		if err == nil && ok {
			return
		}
		if err != nil && !transient(err) && ctx.Err() == nil {
			t.Fatalf("chromium: waiting for %s (%s): %v", what, expr, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("chromium: gave up waiting for %s (%s) after %s", what, expr, timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Screenshot saves a PNG of the whole page to path, creating its
// directory.
func (b *Browser) Screenshot(t testing.TB, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("chromium: screenshot: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
