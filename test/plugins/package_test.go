package plugins

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/test/berthtest"
)

// TestPluginPackageSignedForHelm: a plugin berth packages and signs is one helm verifies and
// installs with --verify (listing it as signed), and berth's output is helm's.
func TestPluginPackageSignedForHelm(t *testing.T) {
	berthtest.UseHelmHome(t)
	key := berthtest.NewSigningKey(t, "packager")
	dir := bucketPlugin(t, "packed", "pk", t.TempDir())
	dest := filepath.Join(t.TempDir(), "out")
	archive := filepath.Join(dest, "packed-0.1.0.tgz")

	out := mustBerth(t, "plugin", "package", dir, "--keyring", key.Secring, "--key", key.Name, "-d", dest)
	want := "Successfully signed. Signature written to: " + archive + ".prov\n" +
		"Successfully packaged plugin and saved it to: " + archive + "\n"
	if out != want {
		t.Errorf("berth plugin package printed %q, want %q", out, want)
	}
	helmVerify := berthtest.MustHelmShared(t, "plugin", "verify", archive, "--keyring", key.Pubring)
	if got := mustBerth(t, "plugin", "verify", archive, "--keyring", key.Pubring); got != helmVerify {
		t.Errorf("berth plugin verify of berth's package (-helm +berth):\n%s", cmp.Diff(helmVerify, got))
	}
	install := berthtest.MustHelmShared(t, "plugin", "install", archive, "--keyring", key.Pubring)
	if !strings.Contains(install, "Plugin Hash Verified: sha256:") || !strings.Contains(install, "Installed plugin: packed") {
		t.Errorf("helm plugin install --verify of berth's package:\n%s", install)
	}
	if list := berthtest.MustHelmShared(t, "plugin", "list"); provenanceOf(list, "packed") != "signed" {
		t.Errorf("helm plugin list:\n%s\nwant packed signed", list)
	}

	unsigned := t.TempDir()
	out = mustBerth(t, "plugin", "package", dir, "--sign=false", "-d", unsigned)
	if !strings.HasPrefix(out, "WARNING: Skipping plugin signing.") {
		t.Errorf("berth plugin package --sign=false printed %q", out)
	}
	if _, err := os.Stat(filepath.Join(unsigned, "packed-0.1.0.tgz.prov")); err == nil {
		t.Error("berth plugin package --sign=false wrote a provenance file")
	}
}

// TestPluginVerify: berth verifies an archive helm packaged and signed, with helm's output,
// and refuses a tampered one, one signed by another key and one without a provenance file.
func TestPluginVerify(t *testing.T) {
	berthtest.UseHelmHome(t)
	key := berthtest.NewSigningKey(t, "verifier")
	dest := t.TempDir()
	berthtest.MustHelmShared(t, "plugin", "package", bucketPlugin(t, "checked", "ck", t.TempDir()),
		"--keyring", key.Secring, "--key", key.Name, "-d", dest)
	archive := filepath.Join(dest, "checked-0.1.0.tgz")

	want := berthtest.MustHelmShared(t, "plugin", "verify", archive, "--keyring", key.Pubring)
	if got := mustBerth(t, "plugin", "verify", archive, "--keyring", key.Pubring); got != want {
		t.Errorf("berth plugin verify (-helm +berth):\n%s", cmp.Diff(want, got))
	}

	other := berthtest.NewSigningKey(t, "stranger")
	if msg := berthFails(t, "plugin", "verify", archive, "--keyring", other.Pubring); !strings.Contains(msg, "plugin verification failed") {
		t.Errorf("berth plugin verify against another key: %s", msg)
	}

	tampered := filepath.Join(t.TempDir(), "checked-0.1.0.tgz")
	tgz(t, bucketPlugin(t, "checked", "xx", t.TempDir()), tampered)
	copyFile(t, archive+".prov", tampered+".prov")
	if msg := berthFails(t, "plugin", "verify", tampered, "--keyring", key.Pubring); !strings.Contains(msg, "sha256 sum does not match") {
		t.Errorf("berth plugin verify of a tampered archive: %s", msg)
	}
	if _, _, err := berthtest.RunHelmShared(t, "plugin", "verify", tampered, "--keyring", key.Pubring); err == nil {
		t.Error("helm plugin verify accepted the tampered archive: the test proves nothing")
	}

	bare := filepath.Join(t.TempDir(), "checked-0.1.0.tgz")
	copyFile(t, archive, bare)
	if msg := berthFails(t, "plugin", "verify", bare, "--keyring", key.Pubring); !strings.Contains(msg, "could not find provenance file "+bare+".prov") {
		t.Errorf("berth plugin verify without a provenance file: %s", msg)
	}
	if msg := berthFails(t, "plugin", "verify", dest, "--keyring", key.Pubring); !strings.Contains(msg, "only plugin tarballs can be verified") {
		t.Errorf("berth plugin verify of a directory: %s", msg)
	}
}

// TestPluginPackageBadInput: each bad input to berth plugin package says what is wrong and
// writes nothing, not even the destination directory.
func TestPluginPackageBadInput(t *testing.T) {
	berthtest.UseHelmHome(t)
	key := berthtest.NewSigningKey(t, "bad")
	plugin := bucketPlugin(t, "fine", "fn", t.TempDir())
	empty := t.TempDir()
	archive := filepath.Join(t.TempDir(), "fine-0.1.0.tgz")
	tgz(t, plugin, archive)
	linked := bucketPlugin(t, "linked", "ln", t.TempDir())
	if err := os.Symlink("get.sh", filepath.Join(linked, "link.sh")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing path", []string{}, "requires 1 argument"},
		{"no such directory", []string{filepath.Join(empty, "nothing")}, "no such file or directory"},
		{"not a plugin directory", []string{empty}, "invalid plugin directory: plugin metadata (plugin.yaml) missing"},
		{"an archive", []string{archive}, "only supports directories"},
		{"no key named", []string{plugin, "--keyring", key.Secring}, "--key"},
		{"unknown key", []string{plugin, "--keyring", key.Secring, "--key", "nobody"}, `signing key "nobody"`},
		{"public keyring", []string{plugin, "--keyring", key.Pubring, "--key", key.Name}, "not a private key"},
		{"missing keyring", []string{plugin, "--keyring", filepath.Join(empty, "none.gpg"), "--key", key.Name}, "none.gpg"},
		{"symbolic link", []string{linked, "--sign=false"}, "not a regular file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "out")
			args := append([]string{"plugin", "package"}, tt.args...)
			if msg := berthFails(t, append(args, "-d", dest)...); !strings.Contains(msg, tt.want) {
				t.Errorf("berth %s: %s\nwant %q in it", strings.Join(args, " "), msg, tt.want)
			}
			if _, err := os.Stat(dest); err == nil {
				t.Errorf("a refused package wrote %s", dest)
			}
		})
	}
}

// TestPluginPackagePassphrase: an encrypted key signs with its passphrase from
// --passphrase-file, and a wrong passphrase writes nothing.
func TestPluginPackagePassphrase(t *testing.T) {
	berthtest.UseHelmHome(t)
	key := berthtest.NewEncryptedSigningKey(t, "locked", "open sesame")
	dir := bucketPlugin(t, "locked", "lk", t.TempDir())
	right := filepath.Join(t.TempDir(), "right")
	write(t, right, "open sesame\n", 0o600)
	wrong := filepath.Join(t.TempDir(), "wrong")
	write(t, wrong, "guess\n", 0o600)

	dest := filepath.Join(t.TempDir(), "out")
	if msg := berthFails(t, "plugin", "package", dir, "--keyring", key.Secring, "--key", "locked", "--passphrase-file", wrong, "-d", dest); !strings.Contains(msg, `signing key "locked"`) {
		t.Errorf("berth plugin package with a wrong passphrase: %s", msg)
	}
	if _, err := os.Stat(dest); err == nil {
		t.Errorf("a wrong passphrase wrote %s", dest)
	}
	mustBerth(t, "plugin", "package", dir, "--keyring", key.Secring, "--key", "locked", "--passphrase-file", right, "-d", dest)
	berthtest.MustHelmShared(t, "plugin", "verify", filepath.Join(dest, "locked-0.1.0.tgz"), "--keyring", key.Pubring)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
