package plugins

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v4/pkg/registry"

	"github.com/berthdev/berth/test/berthtest"
)

// TestPluginInstallFromOCI: berth installs a plugin it packaged and signed from an OCI registry
// (TLS, with the credentials of helm registry login) as helm does, the same output, and helm
// lists it as signed; --version names the tag; a plain-HTTP registry serves with --plain-http.
func TestPluginInstallFromOCI(t *testing.T) {
	berthtest.IsolateHelmFiles(t)
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{Username: "ci", Password: "s3cret"})
	key := berthtest.NewSigningKey(t, "oci")
	dest := t.TempDir()
	mustBerth(t, "plugin", "package", bucketPlugin(t, "ociplug", "op", t.TempDir()), "--keyring", key.Secring, "--key", key.Name, "-d", dest)
	archive := filepath.Join(dest, "ociplug-0.1.0.tgz")
	pushPlugin(t, reg, "plugins/ociplug:0.1.0", archive, archive+".prov")
	berthtest.MustHelmShared(t, "registry", "login", reg.Host, "--username", "ci", "--password", "s3cret", "--ca-file", reg.CAFile)
	ref := reg.Ref("plugins/ociplug:0.1.0")

	want := berthtest.MustHelmShared(t, "plugin", "install", ref, "--keyring", key.Pubring, "--ca-file", reg.CAFile)
	berthtest.MustHelmShared(t, "plugin", "uninstall", "ociplug")
	got := mustBerth(t, "plugin", "install", ref, "--keyring", key.Pubring, "--ca-file", reg.CAFile)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("berth plugin install of an OCI plugin (-helm +berth):\n%s", diff)
	}
	list := berthtest.MustHelmShared(t, "plugin", "list")
	if provenanceOf(list, "ociplug") != "signed" {
		t.Errorf("helm plugin list:\n%s\nwant ociplug signed", list)
	}
	if out := mustBerth(t, "plugin", "list"); out != list {
		t.Errorf("berth plugin list differs from helm's:\n%s", out)
	}

	mustBerth(t, "plugin", "uninstall", "ociplug")
	if msg := berthFails(t, "plugin", "install", ref, "--keyring", key.Pubring, "--ca-file", reg.CAFile, "--username", "ci", "--password", "wrong"); !strings.Contains(msg, "berth registry login") {
		t.Errorf("berth plugin install with a wrong password: %s", msg)
	}
	if msg := berthFails(t, "plugin", "install", ref, "--keyring", key.Pubring); !strings.Contains(msg, "certificate") || !strings.Contains(msg, ref) {
		t.Errorf("berth plugin install without the registry's CA: %s", msg)
	}
	mustBerth(t, "plugin", "install", reg.Ref("plugins/ociplug"), "--version", "0.1.0", "--keyring", key.Pubring, "--ca-file", reg.CAFile)
	if list := berthtest.MustHelmShared(t, "plugin", "list"); provenanceOf(list, "ociplug") != "signed" {
		t.Errorf("helm plugin list after an install with --version:\n%s", list)
	}

	plain := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{PlainHTTP: true})
	unsigned := helmPackage(t, berthtest.SigningKey{}, "plainplug", "pp")
	pushPlugin(t, plain, "plainplug:0.1.0", unsigned, "")
	out := mustBerth(t, "plugin", "install", plain.Ref("plainplug:0.1.0"), "--plain-http", "--verify=false")
	if want := "WARNING: Skipping plugin signature verification\nInstalled plugin: plainplug\n"; out != want {
		t.Errorf("berth plugin install --verify=false printed %q, want %q", out, want)
	}
	if list := berthtest.MustHelmShared(t, "plugin", "list"); provenanceOf(list, "plainplug") != "unsigned" {
		t.Errorf("helm plugin list:\n%s\nwant plainplug unsigned", list)
	}
}

// TestPluginInstallFromOCIRefused: what helm refuses from a registry (and what cannot be
// reached) berth refuses with an error naming the reference, and writes nothing.
func TestPluginInstallFromOCIRefused(t *testing.T) {
	files := berthtest.IsolateHelmFiles(t)
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{PlainHTTP: true})
	key := berthtest.NewSigningKey(t, "refused")
	archive := helmPackage(t, key, "good", "gd")
	pushPlugin(t, reg, "good:0.1.0", archive, archive+".prov")
	pushPlugin(t, reg, "unsigned:0.1.0", helmPackage(t, berthtest.SigningKey{}, "unsigned", "us"), "")
	pushPlugin(t, reg, "renamed:0.1.0", archive, archive+".prov")
	reg.PushArtifact(t, "other", "0.1.0")
	closed := closedAddress(t)
	silent := silentRegistry(t)

	tests := []struct {
		name string
		ref  string
		args []string
		want string
	}{
		{"unknown tag", reg.Ref("good:9.9.9"), nil, "not found"},
		{"unknown repository", reg.Ref("missing:0.1.0"), nil, "not found"},
		{"no tag", reg.Ref("good"), nil, "has no tag"},
		{"tag and other version", reg.Ref("good:0.1.0"), []string{"--version", "0.2.0"}, "differ"},
		{"not a plugin", reg.Ref("other:0.1.0"), nil, "expected artifact type application/vnd.helm.plugin.v1+json"},
		{"layer of another name", reg.Ref("renamed:0.1.0"), nil, "required layer matching pattern renamed-VERSION.tgz not found"},
		{"unsigned with --verify", reg.Ref("unsigned:0.1.0"), nil, "no provenance file (.prov) found"},
		{"another key", reg.Ref("good:0.1.0"), []string{"--keyring", berthtest.NewSigningKey(t, "other").Pubring}, "plugin verification failed"},
		{"unreachable registry", "oci://" + closed + "/good:0.1.0", nil, "connection refused"},
		{"registry that does not answer", "oci://" + silent + "/good:0.1.0", []string{"--timeout", "1s"}, "not done within --timeout 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := berthtest.FileDigests(t, files.Home)
			args := append([]string{"plugin", "install", tt.ref, "--plain-http", "--keyring", key.Pubring}, tt.args...)
			msg := berthFails(t, args...)
			if !strings.Contains(msg, tt.want) || !strings.Contains(msg, tt.ref) {
				t.Errorf("berth %s: %s\nwant %q and the reference in it", strings.Join(args, " "), msg, tt.want)
			}
			if diff := cmp.Diff(before, berthtest.FileDigests(t, files.Home)); diff != "" {
				t.Errorf("a refused install changed Helm's files (-before +after):\n%s", diff)
			}
		})
	}
	// helm refuses the same artifacts, so the cases above are refusals of Helm's rules.
	for _, ref := range []string{reg.Ref("other:0.1.0"), reg.Ref("renamed:0.1.0"), reg.Ref("unsigned:0.1.0")} {
		if out, _, err := berthtest.RunHelmShared(t, "plugin", "install", ref, "--plain-http", "--keyring", key.Pubring); err == nil {
			t.Errorf("helm plugin install %s succeeded:\n%s", ref, out)
		}
	}
}

// helmPackage packages a bucket plugin called name with helm plugin package, signed by key
// unless key has no keyring, and returns the archive's path.
func helmPackage(t *testing.T, key berthtest.SigningKey, name, scheme string) string {
	t.Helper()
	dest := t.TempDir()
	args := []string{"plugin", "package", bucketPlugin(t, name, scheme, t.TempDir()), "-d", dest}
	if key.Secring == "" {
		args = append(args, "--sign=false")
	} else {
		args = append(args, "--keyring", key.Secring, "--key", key.Name)
	}
	berthtest.MustHelmShared(t, args...)
	return filepath.Join(dest, name+"-0.1.0.tgz")
}

// pushPlugin pushes the plugin archive (and its provenance file prov, unless empty) to
// REPOSITORY:TAG on reg as the artifact Helm's OCI installer pulls: an OCI image manifest of
// artifact type application/vnd.helm.plugin.v1+json, an empty config, and tar layers titled
// with the files' names.
func pushPlugin(t *testing.T, reg *berthtest.OCIRegistry, repoTag, archive, prov string) {
	t.Helper()
	var layers []berthtest.Blob
	for _, p := range []string{archive, prov} {
		if p == "" {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, berthtest.Blob{MediaType: "application/vnd.oci.image.layer.v1.tar", Data: data,
			Annotations: map[string]string{ocispec.AnnotationTitle: filepath.Base(p)}})
	}
	repo, tag, _ := strings.Cut(repoTag, ":")
	reg.Push(t, repo, tag, registry.PluginArtifactType, nil, layers...)
}

// closedAddress is HOST:PORT where nothing listens.
func closedAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// silentRegistry is HOST:PORT of a server that accepts connections and never answers.
func silentRegistry(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	return l.Addr().String()
}
