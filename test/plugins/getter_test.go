package plugins

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// TestGetterPluginInstalledByHelm: a getter plugin helm installed serves its scheme to berth's
// install, pull and show, berth lists it as helm does, and its failure names it and the URL.
func TestGetterPluginInstalledByHelm(t *testing.T) {
	berthtest.UseHelmHome(t)
	env := testenv.New(t)
	root := bucketWithChart(t, "pluggy")
	berthtest.MustHelmShared(t, "plugin", "install", bucketPlugin(t, "fakes3", "s3", root))

	list := mustBerth(t, "plugin", "list")
	if want := berthtest.MustHelmShared(t, "plugin", "list"); list != want {
		t.Errorf("berth plugin list (-helm +berth):\n%s", cmp.Diff(want, list))
	}
	if !strings.Contains(list, "fakes3") || !strings.Contains(list, "getter/v1") {
		t.Errorf("berth plugin list:\n%s\nwant the fakes3 getter", list)
	}

	berthtest.MustBerth(t, env, "install", "pluggy", "s3://bucket/pluggy-0.1.0.tgz")
	if out := berthtest.MustHelm(t, env, "list", "-o", "json"); !strings.Contains(out, `"chart":"pluggy-0.1.0"`) || !strings.Contains(out, `"status":"deployed"`) {
		t.Errorf("helm list after berth install from s3://: %s", out)
	}

	dest := t.TempDir()
	mustBerth(t, "pull", "s3://bucket/pluggy-0.1.0.tgz", "-d", dest)
	if _, err := os.Stat(filepath.Join(dest, "pluggy-0.1.0.tgz")); err != nil {
		t.Errorf("berth pull s3://: %v", err)
	}
	if out := mustBerth(t, "show", "chart", "s3://bucket/pluggy-0.1.0.tgz"); !strings.Contains(out, "name: pluggy") {
		t.Errorf("berth show chart s3://:\n%s", out)
	}

	msg := berthFails(t, "template", "x", "s3://bucket/missing-0.1.0.tgz")
	for _, want := range []string{"getter plugin fakes3", "s3://bucket/missing-0.1.0.tgz", "No such file"} {
		if !strings.Contains(msg, want) {
			t.Errorf("berth template of a missing object: %s\nwant %q in it", msg, want)
		}
	}
}

// TestSchemeWithoutPlugin: a reference whose scheme no getter serves fails naming the scheme
// and `berth plugin list`, and changes nothing in Helm's files.
func TestSchemeWithoutPlugin(t *testing.T) {
	home := berthtest.UseHelmHome(t)
	// A getter of another scheme, installed from an archive (a copy, not a link).
	archive := filepath.Join(t.TempDir(), "fakes3-0.1.0.tgz")
	tgz(t, bucketPlugin(t, "fakes3", "s3", t.TempDir()), archive)
	mustBerth(t, "plugin", "install", archive, "--verify=false")
	before := home.Files(t)
	for _, args := range [][]string{
		{"template", "x", "gs://bucket/chart-0.1.0.tgz"},
		{"pull", "gs://bucket/chart-0.1.0.tgz", "-d", t.TempDir()},
		{"show", "values", "gs://bucket/chart-0.1.0.tgz"},
	} {
		msg := berthFails(t, args...)
		if !strings.Contains(msg, `scheme "gs"`) || !strings.Contains(msg, "`berth plugin list`") {
			t.Errorf("berth %s: %s\nwant the scheme and `berth plugin list` named", strings.Join(args, " "), msg)
		}
	}
	if diff := cmp.Diff(before, home.Files(t)); diff != "" {
		t.Errorf("Helm's files changed (-before +after):\n%s", diff)
	}
}

// hangingPlugin is a getter plugin for scheme that writes the id of a process it started into
// pidFile and waits for it forever.
func hangingPlugin(t *testing.T, scheme, pidFile string) string {
	return getterPlugin(t, "hang", scheme, "sleep 3600 & echo $! > "+pidFile+".tmp; mv "+pidFile+".tmp "+pidFile+"; wait")
}

// TestHangingPluginStoppedByTimeout: a getter plugin that never answers is killed, with the
// processes it started, once the fetch's --timeout is over; the error names the plugin and the
// time, and the repository is not added.
func TestHangingPluginStoppedByTimeout(t *testing.T) {
	home := berthtest.UseHelmHome(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	mustBerth(t, "plugin", "install", hangingPlugin(t, "hang", pidFile))
	repositories := filepath.Join(home.Config, "repositories.yaml")

	msg := berthFails(t, "repo", "add", "stuck", "hang://bucket", "--timeout", "2s")
	for _, want := range []string{"getter plugin hang timed out after 2s", "hang://bucket/index.yaml", "nothing was added"} {
		if !strings.Contains(msg, want) {
			t.Errorf("berth repo add of a hanging plugin's repository: %s\nwant %q in it", msg, want)
		}
	}
	testenv.WaitProcessGone(t, testenv.ReadPID(t, pidFile))
	if b, err := os.ReadFile(repositories); err == nil && strings.Contains(string(b), "stuck") {
		t.Errorf("the repository was added:\n%s", b)
	}
}

// TestHangingPluginStoppedByCancel: a canceled berth (an interrupt) kills a getter plugin that
// is still running.
func TestHangingPluginStoppedByCancel(t *testing.T) {
	berthtest.UseHelmHome(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	mustBerth(t, "plugin", "install", hangingPlugin(t, "hang", pidFile))

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- cli.Run(ctx, cli.Streams{In: strings.NewReader(""), Out: new(strings.Builder), ErrOut: new(berthtest.LockedBuffer)},
			[]string{"template", "x", "hang://bucket/chart-0.1.0.tgz"})
	}()
	pid := testenv.ReadPID(t, pidFile)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("berth template canceled: %v, want context.Canceled", err)
	}
	testenv.WaitProcessGone(t, pid)
}

// TestGetterPluginRepository: a chart repository at a getter plugin's scheme, indexed with berth
// repo index, serves berth repo add, REPO/CHART, --repo, a chart's dependencies and helm alike.
func TestGetterPluginRepository(t *testing.T) {
	berthtest.UseHelmHome(t)
	root := bucketWithChart(t, "pluggy")
	mustBerth(t, "plugin", "install", bucketPlugin(t, "fakes3", "s3", root))
	mustBerth(t, "repo", "index", filepath.Join(root, "bucket"), "--url", "s3://bucket")
	mustBerth(t, "repo", "add", "buck", "s3://bucket")

	want := berthtest.MustHelmShared(t, "template", "rel", "buck/pluggy")
	for _, args := range [][]string{
		{"template", "rel", "buck/pluggy"},
		{"template", "rel", "pluggy", "--repo", "s3://bucket"},
	} {
		if got := mustBerth(t, args...); got != want {
			t.Errorf("berth %s (-helm +berth):\n%s", strings.Join(args, " "), cmp.Diff(want, got))
		}
	}
	app := berthtest.VersionedChart(t, "app", "0.1.0", map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: pluggy\n  version: 0.1.0\n  repository: s3://bucket\n",
	})
	mustBerth(t, "dependency", "update", app)
	if _, err := os.Stat(filepath.Join(app, "charts", "pluggy-0.1.0.tgz")); err != nil {
		t.Errorf("berth dependency update from s3://: %v", err)
	}
}
