package site

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/captf-io/cluster-api-provider-terraform/test/tools"
)

// One headless Chromium serves every test of the package; each check opens
// its own tabs in it.
var (
	browserOnce   sync.Once
	browserCtx    context.Context
	browserErr    error
	browserCancel = func() {}
	browserDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	browserCancel()
	if browserDir != "" {
		os.RemoveAll(browserDir)
	}
	os.Exit(code)
}

// browser returns the context of the package's browser, starting it on first
// use: Debian's chromium (hack/tools/install.sh chromium), headless, with a
// fresh profile and nothing that reaches out to the network on its own.
func browser(t *testing.T) context.Context {
	t.Helper()
	browserOnce.Do(func() {
		var exe string
		exe, browserErr = tools.Path("chromium")
		if browserErr != nil {
			return
		}
		browserDir, browserErr = os.MkdirTemp("", "captf-site-chromium-")
		if browserErr != nil {
			return
		}
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(exe),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.NoFirstRun,
			chromedp.NoDefaultBrowserCheck,
			chromedp.UserDataDir(browserDir),
			chromedp.WindowSize(1280, 900),
			chromedp.Flag("disable-gpu", true),
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.Flag("disable-extensions", true),
			chromedp.Flag("disable-default-apps", true),
			chromedp.Flag("disable-breakpad", true),
			chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter"),
			chromedp.Flag("metrics-recording-only", true),
			chromedp.Flag("password-store", "basic"),
			chromedp.Flag("use-mock-keychain", true),
		}
		allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(allocCtx)
		browserCancel = func() { cancel(); allocCancel() }
		// The first Run starts the browser; its context must outlive every tab.
		if err := chromedp.Do(ctx); err != nil {
			browserErr = fmt.Errorf("start %s: %w", exe, err)
			return
		}
		browserCtx = ctx
	})
	if browserErr != nil {
		t.Fatal(browserErr)
	}
	return browserCtx
}
