package chartcmds

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/test/berthtest"
)

// TestCreate: berth create makes the chart helm create makes, and both linters pass it.
func TestCreate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	berthChart, helmChart := filepath.Join(dir, "berth", "shop"), filepath.Join(dir, "helm", "shop")
	for _, d := range []string{filepath.Dir(berthChart), filepath.Dir(helmChart)} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out := mustBerth(t, "create", berthChart); out != "Creating "+berthChart+"\n" {
		t.Errorf("berth create printed %q", out)
	}
	mustHelm(t, "create", helmChart)
	if diff := cmp.Diff(tree(t, helmChart), tree(t, berthChart)); diff != "" {
		t.Errorf("berth create and helm create differ (-helm +berth):\n%s", diff)
	}
	mustHelm(t, "lint", "--strict", berthChart)
	if out := mustBerth(t, "lint", "--strict", berthChart); !strings.HasSuffix(out, "1 chart(s) linted, 0 chart(s) failed\n") {
		t.Errorf("berth lint of a created chart printed:\n%s", out)
	}
}

// TestCreateFromStarter: --starter takes a starter by name from Helm's starters directory, as
// helm create does, or by path, and fills in the chart's name.
func TestCreateFromStarter(t *testing.T) {
	home := berthtest.UseHelmHome(t)
	starter := filepath.Join(home.Data, "starters", "webapp")
	if err := os.MkdirAll(filepath.Dir(starter), 0o755); err != nil {
		t.Fatal(err)
	}
	mustBerth(t, "create", starter)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: <CHARTNAME>-settings\n"
	if err := os.WriteFile(filepath.Join(starter, "templates", "settings.yaml"), []byte(cm), 0o644); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	for _, d := range []string{"berth", "helm", "path"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	byName := filepath.Join(dir, "berth", "shop")
	mustBerth(t, "create", byName, "--starter", "webapp")
	berthtest.MustHelmShared(t, "create", filepath.Join(dir, "helm", "shop"), "--starter", "webapp")
	if diff := cmp.Diff(tree(t, filepath.Join(dir, "helm", "shop")), tree(t, byName)); diff != "" {
		t.Errorf("berth create --starter and helm create --starter differ (-helm +berth):\n%s", diff)
	}
	got, err := os.ReadFile(filepath.Join(byName, "templates", "settings.yaml"))
	if err != nil || !strings.Contains(string(got), "name: shop-settings") {
		t.Errorf("the starter's template reads %q (%v), want the chart's name in it", got, err)
	}

	byPath := filepath.Join(dir, "path", "shop")
	mustBerth(t, "create", byPath, "-p", starter)
	if diff := cmp.Diff(tree(t, byName), tree(t, byPath)); diff != "" {
		t.Errorf("--starter by path and by name differ (-name +path):\n%s", diff)
	}
	mustBerth(t, "lint", byName)
}
