package chartpkg

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/action"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/berthdev/berth/internal/sequence"
)

// orderedChart writes a chart "app" whose subchart web depends-on its subchart db, both in
// charts/, and whose subchart web has a field of its own in its Chart.yaml.
func orderedChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "app")
	files := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0 # set by CI\nappVersion: \"1.0.0\"\n" +
			"dependencies:\n- name: db\n  version: 0.1.0\n  repository: file://charts/db\n" +
			"- name: web\n  version: 0.1.0\n  repository: file://charts/web\n  depends-on:\n  - db\n",
		"templates/cm.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
		"charts/db/Chart.yaml":       "apiVersion: v2\nname: db\nversion: 0.1.0\n",
		"charts/db/templates/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db\n",
		"charts/web/Chart.yaml":      "apiVersion: v2\nname: web\nversion: 0.1.0\nx-team: storefront\n",
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func archivedChartYAML(t *testing.T, ch *chartv2.Chart) string {
	t.Helper()
	for _, f := range ch.Raw {
		if f.Name == "Chart.yaml" {
			return string(f.Data)
		}
	}
	t.Fatalf("no Chart.yaml in chart %s", ch.Name())
	return ""
}

// TestPackageKeepsChartYAML: the archive holds Chart.yaml as written, with --version and
// --app-version applied, so subcharts keep their order; Helm's own Save drops depends-on.
func TestPackageKeepsChartYAML(t *testing.T) {
	t.Parallel()
	dir, dest := orderedChart(t), filepath.Join(t.TempDir(), "out")
	path, err := Package(dir, Options{Version: "1.2.3", AppVersion: "2.0.0", Destination: dest})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dest, "app-1.2.3.tgz"); path != want {
		t.Errorf("packaged to %s, want %s", path, want)
	}
	ch, err := loader.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.Version != "1.2.3" || ch.Metadata.AppVersion != "2.0.0" {
		t.Errorf("packaged version %q appVersion %q, want 1.2.3 and 2.0.0", ch.Metadata.Version, ch.Metadata.AppVersion)
	}
	orig, _ := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	want := "apiVersion: v2\nname: app\nversion: 1.2.3 # set by CI\nappVersion: \"2.0.0\"\n" + string(orig[len("apiVersion: v2\nname: app\nversion: 0.1.0 # set by CI\nappVersion: \"1.0.0\"\n"):])
	if diff := cmp.Diff(want, archivedChartYAML(t, ch)); diff != "" {
		t.Errorf("packaged Chart.yaml (-want +got):\n%s", diff)
	}
	for _, sub := range ch.Dependencies() {
		if sub.Name() == "web" {
			if got := archivedChartYAML(t, sub); got != "apiVersion: v2\nname: web\nversion: 0.1.0\nx-team: storefront\n" {
				t.Errorf("packaged charts/web/Chart.yaml:\n%s", got)
			}
		}
	}
	if got := dependsOn(t, ch); !cmp.Equal(got, map[string][]string{"web": {"db"}}) {
		t.Errorf("packaged chart orders its subcharts by %v, want web after db", got)
	}

	// Helm's Save, which helm package uses, writes Chart.yaml from its metadata.
	src, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	helmPath, err := chartutil.Save(src, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	helmCh, err := loader.LoadFile(helmPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := dependsOn(t, helmCh); len(got) != 0 {
		t.Errorf("Helm's Save kept depends-on %v: berth's own Chart.yaml handling may no longer be needed", got)
	}
}

func dependsOn(t *testing.T, ch *chartv2.Chart) map[string][]string {
	t.Helper()
	charts, err := sequence.ChartsOf(ch)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range charts {
		if c.Path == ch.Name() {
			return c.DependsOn
		}
	}
	return nil
}

// TestPackageBadInputWritesNothing: a missing path, a directory that is not a chart, a chart
// that does not package and a key not in the keyring fail with nothing in the destination.
func TestPackageBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	keyring := writeKey(t, "signer")
	tests := []struct {
		name string
		dir  func(t *testing.T) string
		opts Options
		kind ErrorKind
	}{
		{name: "missing path", dir: func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }, kind: KindNoPath},
		{name: "not a chart", dir: func(t *testing.T) string { return t.TempDir() }, kind: KindNotChart},
		{name: "bad version", dir: orderedChart, opts: Options{Version: "not-semver"}},
		{name: "missing key", dir: orderedChart, opts: Options{Signing: &Signing{Key: "nobody", Keyring: keyring}}, kind: KindNoKey},
		{name: "missing keyring", dir: orderedChart, opts: Options{Signing: &Signing{Key: "signer", Keyring: keyring + ".nope"}}, kind: KindNoKeyring},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dest := filepath.Join(t.TempDir(), "out")
			tt.opts.Destination = dest
			_, err := Package(tt.dir(t), tt.opts)
			var ce *Error
			switch {
			case err == nil:
				t.Fatal("packaged")
			case tt.kind != 0 && (!errors.As(err, &ce) || ce.Kind != tt.kind):
				t.Errorf("error %v, want one of kind %d", err, tt.kind)
			}
			if _, err := os.Stat(dest); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the destination was written: %v", err)
			}
		})
	}
}

// TestPackageSigned: a signed archive verifies against the signer's public key.
func TestPackageSigned(t *testing.T) {
	t.Parallel()
	secring := writeKey(t, "signer")
	dest := t.TempDir()
	path, err := Package(orderedChart(t), Options{Destination: dest, Signing: &Signing{Key: "signer", Keyring: secring}})
	if err != nil {
		t.Fatal(err)
	}
	// A secret keyring holds the public keys too.
	out, err := (&action.Verify{Keyring: secring}).Run(path)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if !strings.Contains(out, "Signed by: signer (test) <signer@berth.invalid>") || !strings.Contains(out, "Chart Hash Verified: sha256:") {
		t.Errorf("verify printed:\n%s", out)
	}
}

// writeKey writes an unencrypted OpenPGP key named name into a secret keyring and returns its
// path.
func writeKey(t *testing.T, name string) string {
	t.Helper()
	e, err := openpgp.NewEntity(name, "test", name+"@berth.invalid", nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "secring.gpg")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := e.SerializePrivate(f, nil); err != nil {
		t.Fatal(err)
	}
	return path
}
