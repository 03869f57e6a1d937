package plugins

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallRunsHooks: installing a plugin from a directory links it and runs its install
// hook (with $HELM_PLUGIN_DIR expanded); uninstalling removes the link, not the directory,
// and runs the delete hook; a second install is refused with nothing changed.
func TestInstallRunsHooks(t *testing.T) {
	t.Parallel()
	marks := t.TempDir()
	src := filepath.Join(t.TempDir(), "hooked")
	yaml := `apiVersion: v1
name: hooked
type: cli/v1
runtime: subprocess
version: 1.0.0
config: {}
runtimeConfig:
  platformCommand:
  - command: true
  platformHooks:
    install:
    - command: sh
      args: [-c, "echo $HELM_PLUGIN_NAME > ` + marks + `/install; echo $HELM_PLUGIN_DIR >> ` + marks + `/install"]
    delete:
    - command: sh
      args: [-c, "touch ` + marks + `/delete"]
`
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, FileName), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "plugins")
	res, err := Install(t.Context(), InstallOptions{Source: src, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(marks, "install"))
	if want := "hooked\n" + filepath.Join(dir, "hooked") + "\n"; err != nil || string(b) != want {
		t.Errorf("install hook wrote %q (%v), want %q", b, err, want)
	}
	if _, err := Install(t.Context(), InstallOptions{Source: src, Dir: dir}); !errors.As(err, new(*ExistsError)) {
		t.Errorf("second install: %v, want an ExistsError", err)
	}
	if err := Uninstall(t.Context(), res.Plugin, dir, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(marks, "delete")); err != nil {
		t.Errorf("delete hook did not run: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "hooked")); err == nil {
		t.Error("the plugin is still installed")
	}
	if _, err := os.Stat(filepath.Join(src, FileName)); err != nil {
		t.Errorf("uninstall removed the plugin's source directory: %v", err)
	}
}

// TestInstallArchiveWithoutMetadataChangesNothing: an archive that holds no plugin.yaml is
// refused and leaves the plugins directory empty.
func TestInstallArchiveWithoutMetadataChangesNothing(t *testing.T) {
	t.Parallel()
	archive := filepath.Join(t.TempDir(), "empty-1.0.0.tgz")
	// An archive of a README only.
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: "empty/README", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte("hi"))
	tw.Close()
	gz.Close()
	if err := os.WriteFile(archive, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, err := Install(t.Context(), InstallOptions{Source: archive, Dir: dir})
	if !errors.Is(err, ErrNoMetadata) {
		t.Fatalf("install of an archive without plugin.yaml: %v, want ErrNoMetadata", err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) > 0 {
		t.Errorf("the plugins directory holds %s", strings.Join(names, ", "))
	}
}
