package plugins

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"helm.sh/helm/v4/pkg/getter"

	"github.com/berthdev/berth/internal/testenv"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml string
		want       Metadata
		wantErr    string
	}{{
		name: "v1 getter",
		yaml: `apiVersion: v1
name: s3
type: getter/v1
runtime: subprocess
version: 1.2.3
sourceURL: https://example.com/s3
config:
  protocols: [s3, s3a]
runtimeConfig:
  protocolCommands:
  - protocols: [s3, s3a]
    platformCommand:
    - command: bin/get
      args: [--quiet]
`,
		want: Metadata{APIVersion: "v1", Name: "s3", Type: TypeGetter, Runtime: "subprocess", Version: "1.2.3",
			SourceURL: "https://example.com/s3", Protocols: []string{"s3", "s3a"},
			ProtocolCommands: []ProtocolCommand{{Protocols: []string{"s3", "s3a"}, PlatformCommand: []PlatformCommand{{Command: "bin/get", Args: []string{"--quiet"}}}}},
			expandHookArgs:   true},
	}, {
		name: "legacy downloader",
		yaml: `name: gcs
version: 0.3.0
downloaders:
- command: bin/gcs
  protocols: [gs]
hooks:
  install: echo hi
`,
		want: Metadata{APIVersion: "legacy", Name: "gcs", Type: TypeGetter, Runtime: "subprocess", Version: "0.3.0",
			Protocols:        []string{"gs"},
			ProtocolCommands: []ProtocolCommand{{Protocols: []string{"gs"}, PlatformCommand: []PlatformCommand{{Command: "bin/gcs"}}}},
			Hooks:            map[string][]PlatformCommand{"install": {{Command: "sh", Args: []string{"-c", "echo hi"}}}}},
	}, {
		name: "legacy cli",
		yaml: "name: diff\nversion: 3.9.0\ncommand: $HELM_PLUGIN_DIR/diff\n",
		want: Metadata{APIVersion: "legacy", Name: "diff", Type: TypeCLI, Runtime: "subprocess", Version: "3.9.0", expandHookArgs: true},
	}, {
		name:    "v1 unknown field",
		yaml:    "apiVersion: v1\nname: x\ntype: cli/v1\nruntime: subprocess\nversion: 1.0.0\nbogus: 1\n",
		wantErr: "bogus",
	}, {
		name:    "v1 without version",
		yaml:    "apiVersion: v1\nname: x\ntype: cli/v1\nruntime: subprocess\n",
		wantErr: "`version` is required",
	}, {
		name:    "getter without protocols",
		yaml:    "apiVersion: v1\nname: x\ntype: getter/v1\nruntime: subprocess\nversion: 1.0.0\nconfig: {}\n",
		wantErr: "getter has no protocols",
	}, {
		name:    "bad name",
		yaml:    "name: a.b\nversion: 1.0.0\n",
		wantErr: `invalid plugin name "a.b"`,
	}, {
		name:    "unknown apiVersion",
		yaml:    "apiVersion: v2\nname: x\n",
		wantErr: `invalid plugin apiVersion: "v2"`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parse([]byte(tt.yaml))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parse: error %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(Metadata{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestArchiveName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"s3-1.2.3.tgz": "s3", "helm-diff-3.9.0.tar.gz": "helm-diff", "plain.tgz": "plain", "x-v1.tgz": "x-v1",
	} {
		if got := archiveName(in); got != want {
			t.Errorf("archiveName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLoadWithoutMetadata(t *testing.T) {
	t.Parallel()
	_, err := Load(t.TempDir())
	if !errors.Is(err, ErrNoMetadata) {
		t.Fatalf("Load of an empty directory: %v, want ErrNoMetadata", err)
	}
}

// TestRunKillsGroup: a command whose context ends is killed with the processes it started, and
// run returns the context's cause rather than waiting for them.
func TestRunKillsGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	script := "sleep 600 & echo $! > " + pidFile + "; wait"
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, "sh", []string{"-c", script}, environ(nil), &limitedBuffer{max: 1 << 10}) }()
	pid := testenv.ReadPID(t, pidFile)
	stop := errors.New("stopped by the test")
	cancel(stop)
	if err := <-done; !errors.Is(err, stop) {
		t.Fatalf("run: %v, want the context's cause", err)
	}
	testenv.WaitProcessGone(t, pid)
}

// TestReadOptions: the credentials and TLS files Helm's getter options carry reach a plugin
// (they are read from Helm's unexported options by name: a Helm that renames them fails here).
func TestReadOptions(t *testing.T) {
	t.Parallel()
	o := readOptions([]getter.Option{
		getter.WithBasicAuth("alice", "s3cret"),
		getter.WithTLSClientConfig("c.pem", "k.pem", "ca.pem"),
		getter.WithPassCredentialsAll(true),
	})
	got := []string{o.str("username"), o.str("password"), o.str("certFile"), o.str("keyFile"), o.str("caFile")}
	if diff := cmp.Diff([]string{"alice", "s3cret", "c.pem", "k.pem", "ca.pem"}, got); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	if !o.boolean("passCredentialsAll") {
		t.Error("passCredentialsAll not read")
	}
}

// TestGetterRun: a getter plugin gets the URL and the TLS files as its last arguments and the
// credentials in its environment, and its failure names it and the URL, with what it wrote to
// stderr.
func TestGetterRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := `#!/bin/sh
[ "$4" = "fake://ok/x" ] && { echo "$1 $2 $3 $HELM_PLUGIN_USERNAME:$HELM_PLUGIN_PASSWORD $HELM_PLUGIN_NAME"; exit 0; }
echo "no such object: $4" >&2; exit 3
`
	if err := os.WriteFile(filepath.Join(dir, "get.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p := &Plugin{Dir: dir, Metadata: Metadata{Name: "fake", Type: TypeGetter, Runtime: "subprocess", Protocols: []string{"fake"},
		ProtocolCommands: []ProtocolCommand{{Protocols: []string{"fake"}, PlatformCommand: []PlatformCommand{{Command: "get.sh"}}}}}}
	providers, _ := Getters(t.Context(), []*Plugin{p}, GetterOptions{MaxBytes: 1 << 10})
	g, err := providers.ByScheme("fake")
	if err != nil {
		t.Fatal(err)
	}
	buf, err := g.Get("fake://ok/x", getter.WithBasicAuth("u", "p"), getter.WithTLSClientConfig("c", "k", "ca"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "c k ca u:p fake\n"; got != want {
		t.Errorf("plugin wrote %q, want %q", got, want)
	}
	_, err = g.Get("fake://missing/y")
	var ge *GetterError
	if !errors.As(err, &ge) || ge.Plugin != "fake" || ge.URL != "fake://missing/y" || !strings.Contains(err.Error(), "no such object") {
		t.Errorf("Get of a missing object: %v, want a GetterError naming the plugin, the URL and its stderr", err)
	}
}
