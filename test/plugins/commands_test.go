package plugins

import (
	"archive/tar"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berthdev/berth/test/berthtest"
)

// TestPluginInstallUninstallWithHelm: a plugin berth installs from a directory is one helm
// lists, and berth uninstall removes it for helm too; the errors name what to do.
func TestPluginInstallUninstallWithHelm(t *testing.T) {
	home := berthtest.UseHelmHome(t)
	dir := bucketPlugin(t, "fakes3", "s3", t.TempDir())

	out := mustBerth(t, "plugin", "install", dir)
	if want := "Installing plugin from local directory (development mode)\nInstalled plugin: fakes3\n"; out != want {
		t.Errorf("berth plugin install printed %q, want %q", out, want)
	}
	if list := berthtest.MustHelmShared(t, "plugin", "list"); !strings.Contains(list, "fakes3") || !strings.Contains(list, "local dev") {
		t.Errorf("helm plugin list after berth plugin install:\n%s", list)
	}
	if msg := berthFails(t, "plugin", "install", dir); !strings.Contains(msg, "already exists") || !strings.Contains(msg, "berth plugin uninstall fakes3") {
		t.Errorf("second berth plugin install: %s", msg)
	}

	if out := mustBerth(t, "plugin", "uninstall", "fakes3"); out != "Uninstalled plugin: fakes3\n" {
		t.Errorf("berth plugin uninstall printed %q", out)
	}
	if list := berthtest.MustHelmShared(t, "plugin", "list"); strings.Contains(list, "fakes3") {
		t.Errorf("helm plugin list after berth plugin uninstall:\n%s", list)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("uninstalling a plugin linked from a directory removed the directory: %v", err)
	}
	if msg := berthFails(t, "plugin", "uninstall", "fakes3"); !strings.Contains(msg, "plugin fakes3 not found") || !strings.Contains(msg, "`berth plugin list`") {
		t.Errorf("berth plugin uninstall of an unknown plugin: %s", msg)
	}

	before := home.Files(t)
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if msg := berthFails(t, "plugin", "install", empty); !strings.Contains(msg, "plugin.yaml") {
		t.Errorf("berth plugin install of a directory without plugin.yaml: %s", msg)
	}
	if msg := berthFails(t, "plugin", "install", filepath.Join(t.TempDir(), "nothing-here")); !strings.Contains(msg, "no such plugin directory") {
		t.Errorf("berth plugin install of a path that does not exist: %s", msg)
	}
	if after := home.Files(t); len(after) != len(before) {
		t.Errorf("a refused install changed Helm's files: %d entries, were %d", len(after), len(before))
	}
}

// TestPluginInstallFromArchivesAndGit: berth installs a plugin from an archive on disk, from an
// archive's URL and from a git repository (and updates it from there), and helm lists each.
func TestPluginInstallFromArchivesAndGit(t *testing.T) {
	berthtest.UseHelmHome(t)
	archives := t.TempDir()
	tgz(t, bucketPlugin(t, "ondisk", "od", t.TempDir()), filepath.Join(archives, "ondisk-0.1.0.tgz"))
	tgz(t, bucketPlugin(t, "overhttp", "oh", t.TempDir()), filepath.Join(archives, "overhttp-0.1.0.tgz"))
	srv := httptest.NewServer(http.FileServer(http.Dir(archives)))
	t.Cleanup(srv.Close)

	if msg := berthFails(t, "plugin", "install", filepath.Join(archives, "ondisk-0.1.0.tgz")); !strings.Contains(msg, ".prov") {
		t.Errorf("berth plugin install of an unsigned archive with --verify: %s", msg)
	}
	mustBerth(t, "plugin", "install", filepath.Join(archives, "ondisk-0.1.0.tgz"), "--verify=false")
	mustBerth(t, "plugin", "install", srv.URL+"/overhttp-0.1.0.tgz", "--verify=false")

	repoDir := gitPlugin(t)
	mustBerth(t, "plugin", "install", "file://"+repoDir, "--version", "0.1.0", "--verify=false")
	list := berthtest.MustHelmShared(t, "plugin", "list")
	for _, want := range []string{"ondisk", "overhttp", "ingit"} {
		if !strings.Contains(list, want) {
			t.Errorf("helm plugin list:\n%s\nwant %s", list, want)
		}
	}
	if out := mustBerth(t, "plugin", "update", "ingit"); out != "Updated plugin: ingit\n" {
		t.Errorf("berth plugin update printed %q", out)
	}
	if msg := berthFails(t, "plugin", "update", "ondisk"); !strings.Contains(msg, "cannot get information about plugin source") {
		t.Errorf("berth plugin update of a plugin from an archive: %s", msg)
	}
}

// tgz packs the plugin directory dir into the archive dest, under a directory of its name.
func tgz(t *testing.T, dir, dest string) {
	t.Helper()
	f, err := os.Create(dest)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		info, _ := e.Info()
		h := &tar.Header{Name: filepath.Base(dir) + "/" + e.Name(), Mode: int64(info.Mode().Perm()), Size: int64(len(b)), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
}

// gitPlugin makes a git repository ingit holding a getter plugin, tagged 0.1.0.
func gitPlugin(t *testing.T) string {
	t.Helper()
	src := bucketPlugin(t, "ingit", "ig", t.TempDir())
	repoDir := filepath.Join(t.TempDir(), "ingit")
	if err := os.Rename(src, repoDir); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "--quiet", "-b", "main"},
		{"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", "plugin"},
		{"tag", "0.1.0"},
	} {
		cmd := exec.Command("git", append([]string{"-C", repoDir}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return repoDir
}
