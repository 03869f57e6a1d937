package chartcmds

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/sequence"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// TestPackageInstallsWithHelm: berth package prints what helm package prints, applies
// --version and --app-version, and helm installs the archive.
func TestPackageInstallsWithHelm(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	dir, dest := configMapChart(t, "shop"), filepath.Join(t.TempDir(), "out")
	out := mustBerth(t, "package", dir, "--version", "1.2.3", "--app-version", "4.5.6", "-d", dest)
	archive := filepath.Join(dest, "shop-1.2.3.tgz")
	if want := "Successfully packaged chart and saved it to: " + archive + "\n"; out != want {
		t.Errorf("berth package printed %q, want %q", out, want)
	}
	helmDest := filepath.Join(t.TempDir(), "out")
	if got, want := mustHelm(t, "package", dir, "--version", "1.2.3", "--app-version", "4.5.6", "-d", helmDest),
		strings.ReplaceAll(out, dest, helmDest); got != want {
		t.Errorf("helm package printed %q, berth %q", got, out)
	}

	berthtest.MustHelm(t, env, "install", "shop", archive)
	var releases []struct {
		Chart      string `json:"chart"`
		AppVersion string `json:"app_version"`
	}
	if err := json.Unmarshal([]byte(berthtest.MustHelm(t, env, "list", "-o", "json")), &releases); err != nil {
		t.Fatal(err)
	}
	if len(releases) != 1 || releases[0].Chart != "shop-1.2.3" || releases[0].AppVersion != "4.5.6" {
		t.Errorf("helm lists %+v, want chart shop-1.2.3 at appVersion 4.5.6", releases)
	}
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "shop", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["version"] != "1.2.3" || cm.Data["appVersion"] != "4.5.6" {
		t.Errorf("the installed ConfigMap holds %v, want version 1.2.3 and appVersion 4.5.6", cm.Data)
	}
}

// orderedChart writes a chart "app" whose subchart web comes after its subchart db
// (depends-on, HIP-0025), both in charts/.
func orderedChart(t *testing.T) string {
	t.Helper()
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "-{{ .Release.Name }}\n"
	}
	return berthtest.WriteChart(t, "app", map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\n" +
			"dependencies:\n- name: db\n  version: 0.1.0\n  repository: file://charts/db\n" +
			"- name: web\n  version: 0.1.0\n  repository: file://charts/web\n  depends-on: [db]\n",
		"templates/cm.yaml":            cm("app"),
		"charts/db/Chart.yaml":         "apiVersion: v2\nname: db\nversion: 0.1.0\n",
		"charts/db/templates/cm.yaml":  cm("db"),
		"charts/web/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"charts/web/templates/cm.yaml": cm("web"),
	})
}

// TestPackageKeepsDependsOn: the archive berth packages keeps a dependency's depends-on, so its
// subcharts are still ordered; helm package drops it, which is why berth packages on its own.
func TestPackageKeepsDependsOn(t *testing.T) {
	t.Parallel()
	dir := orderedChart(t)
	berthDest, helmDest := t.TempDir(), t.TempDir()
	mustBerth(t, "package", dir, "--version", "0.2.0", "-d", berthDest)
	mustHelm(t, "package", dir, "--version", "0.2.0", "-d", helmDest)

	want := map[string][]string{"web": {"db"}}
	if got := subchartOrder(t, filepath.Join(berthDest, "app-0.2.0.tgz")); !cmp.Equal(got, want) {
		t.Errorf("berth's archive orders subcharts by %v, want %v", got, want)
	}
	if got := subchartOrder(t, filepath.Join(helmDest, "app-0.2.0.tgz")); len(got) != 0 {
		t.Errorf("helm's archive orders subcharts by %v: helm package now keeps depends-on", got)
	}
}

// subchartOrder returns the depends-on of the subcharts of the chart archive at path, as
// berth's sequencing reads it.
func subchartOrder(t *testing.T, path string) map[string][]string {
	t.Helper()
	ch, err := loader.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	charts, err := sequence.ChartsOf(ch)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range charts {
		if c.Path == ch.Name() {
			return c.DependsOn
		}
	}
	t.Fatalf("sequence.ChartsOf(%s) has no entry for the chart itself", path)
	return nil
}

// TestPackageDependencyUpdate: --dependency-update fetches what Chart.yaml declares from the
// user's repositories into charts/ and the archive.
func TestPackageDependencyUpdate(t *testing.T) {
	berthtest.UseHelmHome(t)
	web := berthtest.VersionedChart(t, "web", "1.0.0", map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"})
	r := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, web)
	mustBerth(t, "repo", "add", "charts", r.URL)
	app := berthtest.WriteChart(t, "app", map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: web\n  version: 1.0.0\n  repository: \"@charts\"\n",
	})
	dest := t.TempDir()
	if _, stderr, err := berthtest.RunBerth(t, "package", app, "-d", dest); err == nil || !strings.Contains(err.Error(), "missing in charts/") {
		t.Errorf("package of a chart missing its dependency: %v\n%s", err, stderr)
	}
	if files := tree(t, dest); len(files) != 0 {
		t.Errorf("a failed package wrote %v", files)
	}
	mustBerth(t, "package", app, "-u", "-d", dest)
	ch, err := loader.LoadFile(filepath.Join(dest, "app-0.1.0.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	if got := dependencyNames(ch); !cmp.Equal(got, []string{"web-1.0.0"}) {
		t.Errorf("the archive holds the subcharts %v, want web-1.0.0", got)
	}
	if _, err := os.Stat(filepath.Join(app, "Chart.lock")); err != nil {
		t.Errorf("no Chart.lock written: %v", err)
	}
}

func dependencyNames(ch *chartv2.Chart) []string {
	var out []string
	for _, d := range ch.Dependencies() {
		out = append(out, d.Name()+"-"+d.Metadata.Version)
	}
	return out
}
