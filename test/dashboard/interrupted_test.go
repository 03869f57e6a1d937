package dashboard

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/berthdev/berth/internal/dashboard"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// TestOperationInProgressShowsJournal: an upgrade under way (waiting for a Deployment that takes
// a while to be ready) shows on the release's page as an operation in progress, who runs it, and
// its journal: the steps done and those left; once it ends, the page says so without a reload.
func TestOperationInProgressShowsJournal(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := configChart(t, "journalled")
	berthtest.MustBerth(t, env, "install", "app", chart)
	if err := os.WriteFile(filepath.Join(chart, "templates", "deploy.yaml"), []byte(berthtest.StartingDeployment("app", "15s")), 0o644); err != nil {
		t.Fatal(err)
	}
	upgraded := make(chan error, 1)
	go func() {
		_, _, err := berthtest.Berth(t, env, "upgrade", "app", chart, "--set", "color=green", "--wait")
		upgraded <- err
	}()

	base := serve(t, env, dashboard.Options{}, "")
	p := berthtest.Browser(t)
	p.Navigate(releasePage(base, env.Namespace, "app"))
	p.WaitText("#operation-banner", "operation in progress")
	p.Click("#tab-operation")
	p.WaitText("#journal", "upgrade of revision 2")
	var done, all int
	p.Eval(`document.querySelectorAll("#journal .steps li.done").length`, &done)
	p.Eval(`document.querySelectorAll("#journal .steps li").length`, &all)
	if done == 0 || done >= all {
		t.Errorf("the journal shows %d of %d steps done, want some but not all", done, all)
	}
	p.Screenshot("operation")
	if err := <-upgraded; err != nil {
		t.Fatalf("berth upgrade: %v", err)
	}
	p.WaitText("#no-operation", "No operation is under way")
	p.WaitText("#release-revision", "2")
}
