package chartcmds

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// TestMaskSOPSValues: the values that came from an encrypted values file are masked by berth
// get values (every format, --all too), get all and diff, of the revision that recorded them,
// of one that reuses its values and of a rollback to it, and shown with --reveal-secrets (or
// diff's --show-secrets); the values of a plain file are shown as they are.
func TestMaskSOPSValues(t *testing.T) {
	env := testenv.New(t)
	chartDir := berthtest.VersionedChart(t, "app", "0.1.0", map[string]string{
		"values.yaml":       "db:\n  password: none\nuser: none\nreplicas: 1\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-{{ .Release.Name }}\ndata:\n  url: \"postgres://{{ .Values.user }}:{{ .Values.db.password }}@db/app\"\n  token: {{ .Values.token | quote }}\n  replicas: {{ .Values.replicas | quote }}\n",
	})
	key := berthtest.NewAgeKey(t)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const (
		password, token = "Hunter2-first", "tok-first-s3cret"
		changed         = "Hunter2-second"
	)
	plain := write("plain.yaml", []byte("user: plain-user\n"))
	enc := func(name, pw string) string {
		doc := "db:\n  password: " + pw + "\ntoken: " + token + "\n"
		return write(name, berthtest.EncryptSOPS(t, []byte(doc), false, key.Recipient))
	}
	first, second := enc("first.enc.yaml", password), enc("second.enc.yaml", changed)
	useAgeKeyFile(t, key.Identity)

	berthtest.MustBerth(t, env, "install", "app", chartDir, "-f", plain, "-f", first)

	masked := func(t *testing.T, out string, secrets ...string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("the output shows %q:\n%s", s, out)
			}
		}
		if !strings.Contains(out, "(masked") {
			t.Errorf("the output masks nothing:\n%s", out)
		}
	}
	shown := func(t *testing.T, out string, values ...string) {
		t.Helper()
		for _, v := range values {
			if !strings.Contains(out, v) {
				t.Errorf("the output does not show %q:\n%s", v, out)
			}
		}
	}
	getValues := func(t *testing.T, wantShown string, args ...string) {
		t.Helper()
		for _, format := range []string{"table", "yaml", "json"} {
			out, _ := berthtest.MustBerth(t, env, append([]string{"get", "values", "app", "-o", format}, args...)...)
			masked(t, out, password, token, changed)
			shown(t, out, "plain-user")
			if format != "json" && !strings.Contains(out, "password: (masked)") {
				t.Errorf("-o %s does not mask db.password by its key:\n%s", format, out)
			}
		}
		out, _ := berthtest.MustBerth(t, env, append([]string{"get", "values", "app", "--reveal-secrets"}, args...)...)
		shown(t, out, wantShown, token, "plain-user")
	}

	t.Run("get values", func(t *testing.T) {
		getValues(t, password)
		getValues(t, password, "--all")
		out, _ := berthtest.MustBerth(t, env, "get", "all", "app")
		values, _, _ := strings.Cut(out, "HOOKS:") // the manifest is shown as rendered
		masked(t, values, password, token)
		out, _ = berthtest.MustBerth(t, env, "get", "all", "app", "--template", "{{ .Release.Config }}")
		masked(t, out, password, token)
		out, _ = berthtest.MustBerth(t, env, "get", "all", "app", "--reveal-secrets")
		values, _, _ = strings.Cut(out, "HOOKS:")
		shown(t, values, password, token)
	})

	t.Run("diff upgrade", func(t *testing.T) {
		args := []string{"diff", "upgrade", "app", chartDir, "-f", plain, "-f", second}
		out, _, err := berthtest.Berth(t, env, args...)
		if err != nil {
			t.Fatal(err)
		}
		masked(t, out, password, changed, token)
		shown(t, out, "(masked, before)", "(masked, changed)", "1 configured")
		for _, flag := range []string{"--show-secrets", "--reveal-secrets"} {
			out, _ := berthtest.MustBerth(t, env, append(args, flag)...)
			shown(t, out, password, changed)
		}
	})

	t.Run("upgrade reusing the values", func(t *testing.T) {
		berthtest.MustBerth(t, env, "upgrade", "app", chartDir, "--reuse-values", "--set", "replicas=2")
		getValues(t, password)
		out, _ := berthtest.MustBerth(t, env, "get", "values", "app")
		shown(t, out, "replicas: 2")
	})

	t.Run("upgrade with a new secret, then a rollback", func(t *testing.T) {
		berthtest.MustBerth(t, env, "upgrade", "app", chartDir, "-f", plain, "-f", second)
		getValues(t, changed)
		berthtest.MustBerth(t, env, "rollback", "app", "1")
		getValues(t, password)
	})
}
