package lifecycle

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// pushedDigest matches the digest berth push and helm push report.
var pushedDigest = regexp.MustCompile(`Digest: (sha256:[0-9a-f]{64})`)

// ociChart packages the chart "web" at version: one ConfigMap per release that says the version.
func ociChart(t *testing.T, version string) string {
	t.Helper()
	return berthtest.PackageNewChart(t, "web", version, map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  version: {{ .Chart.Version | quote }}\n",
	})
}

// configMapVersion is the version the release's ConfigMap says.
func configMapVersion(t *testing.T, env *testenv.Env, name string) string {
	t.Helper()
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read ConfigMap %s: %v", name, err)
	}
	return cm.Data["version"]
}

// berthWithStdin runs berth in-process with stdin as its standard input.
func berthWithStdin(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := cli.Run(t.Context(), cli.Streams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}, args)
	return out.String() + errOut.String(), err
}

// TestOCIRegistryLifecycle logs in to a TLS registry with basic auth, pushes two versions of a
// chart, installs, upgrades and installs by digest from it, and renders it as helm template
// does. Every bad source stops before the cluster or Helm's files change, saying what to do.
func TestOCIRegistryLifecycle(t *testing.T) {
	files := berthtest.IsolateHelmFiles(t)
	env := testenv.New(t)
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{Username: "ci", Password: "s3cret"})
	ca := []string{"--ca-file", reg.CAFile}
	chartRef := reg.Ref("charts/web")

	// Without a terminal to ask on, a login without a password says how to give one.
	if out, err := berthWithStdin(t, "", "registry", "login", reg.Host, "-u", "ci", "--ca-file", reg.CAFile); err == nil || !strings.Contains(err.Error(), "--password-stdin") {
		t.Fatalf("login without a password: got %v, want an error that names --password-stdin\n%s", err, out)
	}
	// A refused login stores nothing.
	out, err := berthWithStdin(t, "wrong\n", "registry", "login", reg.Host, "-u", "ci", "--password-stdin", "--ca-file", reg.CAFile)
	if err == nil || !strings.Contains(err.Error(), "refused the username and password") {
		t.Fatalf("login with a wrong password: got %v, want it refused\n%s", err, out)
	}
	if diff := cmp.Diff(map[string][32]byte{}, berthtest.FileDigests(t, files.Home)); diff != "" {
		t.Fatalf("a refused login wrote Helm's files:\n%s", diff)
	}
	if out, err := berthWithStdin(t, "s3cret\n", "registry", "login", reg.Host, "-u", "ci", "--password-stdin", "--ca-file", reg.CAFile); err != nil || !strings.Contains(out, "Login Succeeded") {
		t.Fatalf("berth registry login: %v\n%s", err, out)
	}

	var digests []string
	for _, version := range []string{"0.1.0", "0.2.0"} {
		stdout, stderr, err := berthtest.RunBerth(t, append([]string{"push", ociChart(t, version), reg.Ref("charts")}, ca...)...)
		m := pushedDigest.FindStringSubmatch(stdout)
		if err != nil || m == nil {
			t.Fatalf("berth push %s: %v\n%s%s", version, err, stdout, stderr)
		}
		digests = append(digests, m[1])
	}

	berthtest.MustBerth(t, env, append([]string{"install", "web", chartRef, "--version", "0.1.0"}, ca...)...)
	if got := configMapVersion(t, env, "web"); got != "0.1.0" {
		t.Errorf("after install --version 0.1.0 the release's ConfigMap says %q", got)
	}
	berthtest.MustBerth(t, env, append([]string{"upgrade", "web", chartRef, "--version", "0.2.0"}, ca...)...)
	if rec := berthtest.LastRecord(t, env, "web"); rec.Version != 2 || rec.Chart.Metadata.Version != "0.2.0" {
		t.Errorf("after upgrade --version 0.2.0: revision %d of chart %s, want revision 2 of 0.2.0", rec.Version, rec.Chart.Metadata.Version)
	}
	if got := configMapVersion(t, env, "web"); got != "0.2.0" {
		t.Errorf("after upgrade the release's ConfigMap says %q", got)
	}
	berthtest.MustBerth(t, env, append([]string{"install", "pinned", chartRef + "@" + digests[0]}, ca...)...)
	if got := configMapVersion(t, env, "pinned"); got != "0.1.0" {
		t.Errorf("after install by the digest of 0.1.0 the release's ConfigMap says %q", got)
	}

	// berth template renders what helm template renders from the same reference, with the
	// credentials berth registry login stored.
	args := append([]string{"template", "web", chartRef, "--version", "0.2.0", "-n", "shop"}, ca...)
	want, stderr, err := berthtest.RunHelm(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	got, stderr, err := berthtest.RunBerth(t, args...)
	if err != nil {
		t.Fatalf("berth %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	if !strings.Contains(want, `version: "0.2.0"`) || got != want {
		t.Errorf("berth template differs from helm template (-helm +berth):\n%s", cmp.Diff(want, got))
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	artifact := reg.PushArtifact(t, "charts/image", "1.0.0")
	tests := []struct {
		name string
		args []string
		// hint is what the error must say to do.
		hint string
	}{
		{name: "unreachable", args: []string{"install", "bad", "oci://" + closed + "/charts/web", "--version", "0.1.0"}, hint: "cannot reach the registry " + closed},
		{name: "wrong password", args: []string{"install", "bad", chartRef, "--version", "0.1.0", "--ca-file", reg.CAFile, "--username", "ci", "--password", "wrong"}, hint: "refused the credentials"},
		{name: "unknown CA", args: []string{"install", "bad", chartRef, "--version", "0.1.0"}, hint: "--ca-file"},
		{name: "no such version", args: []string{"install", "bad", chartRef, "--version", "9.9.9", "--ca-file", reg.CAFile}, hint: "check the reference and --version"},
		{name: "digest of another version", args: []string{"install", "bad", chartRef + "@" + digests[1], "--version", "0.1.0", "--ca-file", reg.CAFile}, hint: "the digest is not that of the version"},
		{name: "digest in --version", args: []string{"install", "bad", chartRef, "--version", "0.1.0@" + digests[0], "--ca-file", reg.CAFile}, hint: "put the digest in the reference"},
		{name: "not a chart", args: []string{"install", "bad", reg.Ref("charts/image@" + artifact), "--ca-file", reg.CAFile}, hint: "not a Helm chart"},
		{name: "upgrade to no such version", args: []string{"upgrade", "web", chartRef, "--version", "0.3.0", "--ca-file", reg.CAFile}, hint: "check the reference and --version"},
		{name: "template of no such version", args: []string{"template", "bad", chartRef, "--version", "0.3.0", "--ca-file", reg.CAFile}, hint: "check the reference and --version"},
		{name: "push to an unreachable registry", args: []string{"push", ociChart(t, "0.3.0"), "oci://" + closed + "/charts"}, hint: "cannot reach the registry"},
	}
	// Last, with the credentials removed.
	logout := len(tests)
	tests = append(tests,
		struct {
			name string
			args []string
			hint string
		}{name: "no login", args: []string{"install", "bad", chartRef, "--version", "0.1.0", "--ca-file", reg.CAFile}, hint: "berth registry login " + reg.Host})
	for i, tt := range tests {
		if i == logout {
			berthtest.MustBerth(t, env, "registry", "logout", reg.Host)
		}
		t.Run(tt.name, func(t *testing.T) {
			before := berthtest.FileDigests(t, files.Home)
			_, stderr, err := berthtest.Berth(t, env, tt.args...)
			if err == nil {
				t.Fatalf("berth %s succeeded", strings.Join(tt.args, " "))
			}
			msg := err.Error()
			t.Log(msg)
			if strings.Contains(msg, "\n") || !strings.Contains(msg, tt.hint) {
				t.Errorf("berth %s: got error %q, want one line that says %q", strings.Join(tt.args, " "), msg, tt.hint)
			}
			if tt.args[0] == "install" && !strings.Contains(msg, tt.args[2]) {
				t.Errorf("berth %s: the error %q does not name the reference %s", strings.Join(tt.args, " "), msg, tt.args[2])
			}
			if diff := cmp.Diff(before, berthtest.FileDigests(t, files.Home)); diff != "" {
				t.Errorf("berth %s changed Helm's files (-before +after):\n%s\nstderr:\n%s", strings.Join(tt.args, " "), diff, stderr)
			}
			berthtest.AssertNotRecorded(t, env, "bad")
			berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "bad")
			if rec := berthtest.LastRecord(t, env, "web"); rec.Version != 2 || rec.Chart.Metadata.Version != "0.2.0" {
				t.Errorf("release web changed: revision %d of chart %s, want revision 2 of 0.2.0", rec.Version, rec.Chart.Metadata.Version)
			}
		})
	}
}

// TestOCIRegistryHelmInterop: a helm registry login serves berth, and a berth registry login
// serves helm, through the one registry config file; over plain HTTP too.
func TestOCIRegistryHelmInterop(t *testing.T) {
	berthtest.IsolateHelmFiles(t)
	env := testenv.New(t)
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{Username: "ci", Password: "s3cret"})
	plain := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{PlainHTTP: true, Username: "ci", Password: "s3cret"})

	// helm logs in and pushes; berth installs.
	for _, args := range [][]string{
		{"registry", "login", reg.Host, "-u", "ci", "-p", "s3cret", "--ca-file", reg.CAFile},
		{"push", ociChart(t, "0.1.0"), reg.Ref("charts"), "--ca-file", reg.CAFile},
	} {
		if _, stderr, err := berthtest.RunHelm(t, args...); err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
	}
	berthtest.MustBerth(t, env, "install", "web", reg.Ref("charts/web"), "--version", "0.1.0", "--ca-file", reg.CAFile)
	if got := configMapVersion(t, env, "web"); got != "0.1.0" {
		t.Errorf("the release's ConfigMap says %q, want 0.1.0", got)
	}
	pulled := t.TempDir()
	berthtest.MustBerth(t, env, "pull", reg.Ref("charts/web"), "--version", "0.1.0", "--ca-file", reg.CAFile, "--untar", "-d", pulled)
	if _, err := os.Stat(filepath.Join(pulled, "web", "Chart.yaml")); err != nil {
		t.Errorf("berth pull --untar after helm registry login: %v", err)
	}

	// berth logs in (over plain HTTP) and pushes; helm pulls and shows the chart.
	berthtest.MustBerth(t, env, "registry", "login", plain.Host, "-u", "ci", "-p", "s3cret", "--plain-http")
	berthtest.MustBerth(t, env, "push", ociChart(t, "0.2.0"), plain.Ref("charts"), "--plain-http")
	dir := t.TempDir()
	for _, args := range [][]string{
		{"pull", plain.Ref("charts/web"), "--version", "0.2.0", "--plain-http", "-d", dir},
		{"show", "chart", plain.Ref("charts/web"), "--version", "0.2.0", "--plain-http"},
	} {
		stdout, stderr, err := berthtest.RunHelm(t, args...)
		if err != nil {
			t.Fatalf("helm %s after berth registry login: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		if args[0] == "show" && !strings.Contains(stdout, "version: 0.2.0") {
			t.Errorf("helm show chart printed:\n%s", stdout)
		}
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "web-0.2.0.tgz")); len(matches) != 1 {
		t.Errorf("helm pull wrote no web-0.2.0.tgz in %s", dir)
	}
	berthtest.MustBerth(t, env, "upgrade", "web", plain.Ref("charts/web"), "--version", "0.2.0", "--plain-http")
	if got := configMapVersion(t, env, "web"); got != "0.2.0" {
		t.Errorf("after upgrade from the plain HTTP registry the ConfigMap says %q, want 0.2.0", got)
	}
}
