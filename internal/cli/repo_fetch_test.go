package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/testnet"
)

// useHelmHome points Helm's files at new directories of the test's.
func useHelmHome(t *testing.T) {
	t.Helper()
	base := t.TempDir()
	t.Setenv("HELM_CONFIG_HOME", filepath.Join(base, "config"))
	t.Setenv("HELM_CACHE_HOME", filepath.Join(base, "cache"))
	t.Setenv("HELM_DATA_HOME", filepath.Join(base, "data"))
	t.Setenv("DOCKER_CONFIG", filepath.Join(base, "docker"))
	for _, name := range []string{"HELM_REPOSITORY_CONFIG", "HELM_REPOSITORY_CACHE", "HELM_REGISTRY_CONFIG", "HELM_CONTENT_CACHE", "HELM_PLUGINS"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
}

// TestRepoAddSilentServer: `repo add` of a server that never answers fails when --timeout
// comes, naming the host, and returns when its context is canceled; nothing is added.
func TestRepoAddSilentServer(t *testing.T) {
	useHelmHome(t)
	addr, arrived := testnet.SilentListener(t)
	_, _, err := run(t, "repo", "add", "silent", "http://"+addr, "--timeout", "200ms")
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "did not answer in time") || !strings.Contains(err.Error(), "nothing was added") {
		t.Errorf("repo add of a silent server: got %v, want an error naming %s that says it did not answer in time", err, addr)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var out bytes.Buffer
		done <- Run(ctx, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, []string{"repo", "add", "silent", "http://" + addr})
	}()
	<-arrived
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("repo add canceled: got %v, want context.Canceled", err)
	}
	if stdout, _, err := run(t, "repo", "list"); err == nil && strings.Contains(stdout, "silent") {
		t.Errorf("repo list after failed adds shows the repository:\n%s", stdout)
	}
}

// TestDependencyUpdateCredentialsForTwoRegistries: a username and password for dependencies of
// two registries are refused before any request, with what to do instead.
func TestDependencyUpdateCredentialsForTwoRegistries(t *testing.T) {
	useHelmHome(t)
	a, aArrived := testnet.SilentListener(t)
	b, bArrived := testnet.SilentListener(t)
	dir := filepath.Join(t.TempDir(), "app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	chartYAML := "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n" +
		"  - {name: web, version: 0.1.0, repository: \"oci://" + a + "/charts\"}\n" +
		"  - {name: db, version: 0.1.0, repository: \"oci://" + b + "/charts\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte(chartYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := run(t, "dependency", "update", dir, "--username", "ci", "--password", "s3cret")
	if err == nil || !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), b) || !strings.Contains(err.Error(), "berth registry login") {
		t.Errorf("got %v, want an error naming %s and %s that says to log in to each", err, a, b)
	}
	if err != nil && strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q holds the password", err)
	}
	select {
	case <-aArrived:
		t.Error("a registry of the dependencies was connected to")
	case <-bArrived:
		t.Error("a registry of the dependencies was connected to")
	default:
	}
}
