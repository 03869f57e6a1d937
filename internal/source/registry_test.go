package source_test

import (
	"bytes"
	"errors"
	"io/fs"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	helmcli "helm.sh/helm/v4/pkg/cli"

	"github.com/berthdev/berth/internal/source"
	"github.com/berthdev/berth/test/berthtest"
)

// pushedDigest matches the digest Helm's registry client reports after a push.
var pushedDigest = regexp.MustCompile(`Digest: (sha256:[0-9a-f]{64})`)

// webChart packages the chart "web" at version.
func webChart(t *testing.T, version string) string {
	t.Helper()
	return berthtest.PackageNewChart(t, "web", version, map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  version: {{ .Chart.Version }}\n",
	})
}

// push pushes the chart at path to remote and returns the digest Helm reported.
func push(t *testing.T, settings *helmcli.EnvSettings, path, remote string, opts source.RegistryOptions) string {
	t.Helper()
	var out bytes.Buffer
	if err := source.Push(t.Context(), settings, path, remote, opts, &out); err != nil {
		t.Fatalf("push %s to %s: %v", path, remote, err)
	}
	m := pushedDigest.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("push printed no digest:\n%s", out.String())
	}
	return m[1]
}

// TestRegistryLoginPushLocate logs in to a TLS registry with basic auth, pushes two versions of
// a chart and fetches them by version, by latest and by digest, as Helm does.
func TestRegistryLoginPushLocate(t *testing.T) {
	files := berthtest.IsolateHelmFiles(t)
	settings := helmcli.New()
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{Username: "ci", Password: "s3cret"})
	tlsOpts := source.RegistryOptions{CAFile: reg.CAFile}

	var out bytes.Buffer
	err := source.Login(t.Context(), settings, reg.Host, source.LoginOptions{Username: "ci", Password: "wrong", CAFile: reg.CAFile}, &out)
	var regErr *source.RegistryError
	if !errors.As(err, &regErr) || regErr.Kind != source.KindUnauthorized {
		t.Fatalf("login with a wrong password: got %v (%#v), want a RegistryError of kind unauthorized", err, regErr)
	}
	if _, err := os.Stat(files.RegistryConfig); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a failed login left the registry config %s: %v", files.RegistryConfig, err)
	}
	if err := source.Login(t.Context(), settings, reg.Host, source.LoginOptions{Username: "ci", Password: "s3cret"}, &out); !errors.As(err, &regErr) || regErr.Kind != source.KindTLS {
		t.Fatalf("login without the registry's CA: got %v, want a RegistryError of kind tls", err)
	}
	if err := source.Login(t.Context(), settings, reg.Host, source.LoginOptions{Username: "ci", Password: "s3cret", CAFile: reg.CAFile}, &out); err != nil {
		t.Fatalf("login: %v", err)
	}
	if b, err := os.ReadFile(files.RegistryConfig); err != nil || !strings.Contains(string(b), reg.Host) {
		t.Fatalf("the registry config holds no credentials for %s after login (%v):\n%s", reg.Host, err, b)
	}

	digest1 := push(t, settings, webChart(t, "0.1.0"), reg.Ref("charts"), tlsOpts)
	push(t, settings, webChart(t, "0.2.0"), reg.Ref("charts"), tlsOpts)

	tests := []struct {
		name, ref, version, want string
	}{
		{name: "version", ref: reg.Ref("charts/web"), version: "0.1.0", want: "0.1.0"},
		{name: "latest", ref: reg.Ref("charts/web"), want: "0.2.0"},
		{name: "constraint", ref: reg.Ref("charts/web"), version: "^0.1", want: "0.1.0"},
		{name: "tag in the reference", ref: reg.Ref("charts/web:0.2.0"), want: "0.2.0"},
		{name: "digest", ref: reg.Ref("charts/web@" + digest1), want: "0.1.0"},
		{name: "digest and its version", ref: reg.Ref("charts/web@" + digest1), version: "0.1.0", want: "0.1.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := source.Options{}
			opts.Version, opts.CaFile = tt.version, reg.CAFile
			r, err := source.NewResolver(settings, opts, &out)
			if err != nil {
				t.Fatal(err)
			}
			ch, err := r.Load(t.Context(), tt.ref)
			if err != nil {
				t.Fatalf("load %s version %q: %v", tt.ref, tt.version, err)
			}
			if ch.Metadata.Version != tt.want {
				t.Errorf("load %s version %q: got chart version %s, want %s", tt.ref, tt.version, ch.Metadata.Version, tt.want)
			}
		})
	}

	if err := source.Logout(t.Context(), settings, reg.Host, &out); err != nil {
		t.Fatalf("logout: %v", err)
	}
	if b, err := os.ReadFile(files.RegistryConfig); err != nil || strings.Contains(string(b), reg.Host) {
		t.Fatalf("the registry config still holds credentials for %s after logout (%v):\n%s", reg.Host, err, b)
	}
}

// TestLocateFailures fetches charts that cannot be fetched: each fails with the cause's kind
// and leaves Helm's files (credentials, caches) as they were.
func TestLocateFailures(t *testing.T) {
	files := berthtest.IsolateHelmFiles(t)
	settings := helmcli.New()
	reg := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{Username: "ci", Password: "s3cret"})
	open := berthtest.StartOCIRegistry(t, berthtest.OCIRegistryOptions{PlainHTTP: true})
	creds := source.RegistryOptions{CAFile: reg.CAFile, Username: "ci", Password: "s3cret"}
	push(t, settings, webChart(t, "0.1.0"), reg.Ref("charts"), creds)
	digest2 := push(t, settings, webChart(t, "0.2.0"), reg.Ref("charts"), creds)
	push(t, settings, webChart(t, "0.1.0"), open.Ref("charts"), source.RegistryOptions{PlainHTTP: true})
	reg.PushArtifact(t, "charts/image", "1.0.0")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	tests := []struct {
		name, ref string
		opts      func(o *source.Options)
		want      source.Kind
	}{
		{name: "unreachable", ref: "oci://" + closed + "/charts/web", opts: func(o *source.Options) { o.Version = "0.1.0" }, want: source.KindUnreachable},
		{name: "no login", ref: reg.Ref("charts/web"), opts: func(o *source.Options) { o.Version, o.CaFile = "0.1.0", reg.CAFile }, want: source.KindNoCredentials},
		{name: "wrong password", ref: reg.Ref("charts/web"), opts: func(o *source.Options) {
			o.Version, o.CaFile, o.Username, o.Password = "0.1.0", reg.CAFile, "ci", "wrong"
		}, want: source.KindUnauthorized},
		{name: "unknown CA", ref: reg.Ref("charts/web"), opts: func(o *source.Options) { o.Version, o.Username, o.Password = "0.1.0", "ci", "s3cret" }, want: source.KindTLS},
		{name: "plain HTTP registry", ref: open.Ref("charts/web"), opts: func(o *source.Options) { o.Version = "0.1.0" }, want: source.KindPlainHTTP},
		{name: "no such version", ref: reg.Ref("charts/web"), opts: func(o *source.Options) {
			o.Version, o.CaFile, o.Username, o.Password = "9.9.9", reg.CAFile, "ci", "s3cret"
		}, want: source.KindNotFound},
		{name: "no such version in a range", ref: reg.Ref("charts/web"), opts: func(o *source.Options) {
			o.Version, o.CaFile, o.Username, o.Password = "^3", reg.CAFile, "ci", "s3cret"
		}, want: source.KindNotFound},
		{name: "no such chart", ref: reg.Ref("charts/nothing"), opts: func(o *source.Options) {
			o.Version, o.CaFile, o.Username, o.Password = "0.1.0", reg.CAFile, "ci", "s3cret"
		}, want: source.KindNotFound},
		{name: "no such digest", ref: reg.Ref("charts/web@sha256:" + strings.Repeat("0", 64)), opts: func(o *source.Options) {
			o.CaFile, o.Username, o.Password = reg.CAFile, "ci", "s3cret"
		}, want: source.KindNotFound},
		{name: "digest of another version", ref: reg.Ref("charts/web@" + digest2), opts: func(o *source.Options) {
			o.Version, o.CaFile, o.Username, o.Password = "0.1.0", reg.CAFile, "ci", "s3cret"
		}, want: source.KindDigestMismatch},
		{name: "not a chart", ref: reg.Ref("charts/image"), opts: func(o *source.Options) {
			o.Version, o.CaFile, o.Username, o.Password = "1.0.0", reg.CAFile, "ci", "s3cret"
		}, want: source.KindNotChart},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := berthtest.FileDigests(t, files.Home)
			var opts source.Options
			tt.opts(&opts)
			var out bytes.Buffer
			r, err := source.NewResolver(settings, opts, &out)
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Locate(t.Context(), tt.ref)
			t.Log(err)
			var srcErr *source.Error
			if !errors.As(err, &srcErr) {
				t.Fatalf("locate %s: got %v, want a source.Error", tt.ref, err)
			}
			if srcErr.Kind != tt.want || srcErr.Host != source.OCIHost(tt.ref) {
				t.Errorf("locate %s: got kind %v host %q, want %v %q (%v)", tt.ref, srcErr.Kind, srcErr.Host, tt.want, source.OCIHost(tt.ref), err)
			}
			if diff := cmp.Diff(before, berthtest.FileDigests(t, files.Home)); diff != "" {
				t.Errorf("locate %s changed Helm's files (-before +after):\n%s", tt.ref, diff)
			}
		})
	}
}
