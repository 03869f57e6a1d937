package plugins

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/test/berthtest"
)

// TestSignedPluginArchive: a plugin archive helm packaged and signed installs with berth as
// with helm (the same output, and helm lists it as signed); one whose signature does not
// verify is refused and leaves nothing installed.
func TestSignedPluginArchive(t *testing.T) {
	berthtest.UseHelmHome(t)
	key := berthtest.NewSigningKey(t, "plugins")
	dest := t.TempDir()
	berthtest.MustHelmShared(t, "plugin", "package", bucketPlugin(t, "sigplug", "sg", t.TempDir()),
		"--keyring", key.Secring, "--key", key.Name, "-d", dest)
	archive := filepath.Join(dest, "sigplug-0.1.0.tgz")

	want := berthtest.MustHelmShared(t, "plugin", "install", archive, "--keyring", key.Pubring)
	berthtest.MustHelmShared(t, "plugin", "uninstall", "sigplug")
	got := mustBerth(t, "plugin", "install", archive, "--keyring", key.Pubring)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("berth plugin install of a signed archive (-helm +berth):\n%s", diff)
	}
	if list := berthtest.MustHelmShared(t, "plugin", "list"); provenanceOf(list, "sigplug") != "signed" {
		t.Errorf("helm plugin list:\n%s\nwant sigplug signed", list)
	}
	if out := mustBerth(t, "plugin", "list"); out != berthtest.MustHelmShared(t, "plugin", "list") {
		t.Errorf("berth plugin list differs from helm's:\n%s", out)
	}
	mustBerth(t, "plugin", "uninstall", "sigplug")

	other := berthtest.NewSigningKey(t, "other")
	msg := berthFails(t, "plugin", "install", archive, "--keyring", other.Pubring)
	if !strings.Contains(msg, "plugin verification failed") {
		t.Errorf("berth plugin install verified against another key: %s", msg)
	}
	entries, err := os.ReadDir(filepath.Join(os.Getenv("HELM_DATA_HOME"), "plugins"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("a refused install left %s in the plugins directory", e.Name())
	}
}

// provenanceOf is the PROVENANCE column of plugin name in the output of plugin list.
func provenanceOf(list, name string) string {
	for _, line := range strings.Split(list, "\n") {
		if f := strings.Fields(line); len(f) >= 5 && f[0] == name {
			return f[4]
		}
	}
	return ""
}
