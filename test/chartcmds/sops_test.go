package chartcmds

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// useAgeKeyFile points sops's key lookup at a keys.txt holding identities, and nowhere else.
func useAgeKeyFile(t *testing.T, identities ...string) {
	t.Helper()
	for _, name := range []string{"SOPS_AGE_KEY", "SOPS_AGE_KEY_CMD", "SOPS_AGE_SSH_PRIVATE_KEY_FILE"} {
		t.Setenv(name, "") // restored when the test ends
		os.Unsetenv(name)
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	path := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(path, []byte(strings.Join(identities, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOPS_AGE_KEY_FILE", path)
}

// TestTemplateDecryptsSOPSValues: a values file encrypted with sops (told by its metadata, not
// its name) is decrypted and merged in the order of the flags, before --set; one that cannot be
// decrypted (no key of its recipients, a file changed after encryption) is refused, naming the
// file, its recipients and what to do, and never the plaintext.
func TestTemplateDecryptsSOPSValues(t *testing.T) {
	chartDir := berthtest.VersionedChart(t, "app", "0.1.0", map[string]string{
		"values.yaml":       "password: none\nuser: none\nreplicas: 1\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  password: {{ .Values.password | quote }}\n  user: {{ .Values.user | quote }}\n  replicas: {{ .Values.replicas | quote }}\n",
	})
	key, other := berthtest.NewAgeKey(t), berthtest.NewAgeKey(t)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	plain := write("plain.yaml", []byte("user: from-plain\npassword: from-plain\nreplicas: 2\n"))
	secret := write("secrets.yaml", berthtest.EncryptSOPS(t, []byte("password: Hunter2-s3cret\nuser: from-secrets\n"), false, key.Recipient))
	jsonSecret := write("secrets.json", berthtest.EncryptSOPS(t, []byte(`{"user":"from-json"}`), true, key.Recipient))

	useAgeKeyFile(t, key.Identity)
	out := mustBerth(t, "template", "app", chartDir, "-f", plain, "-f", secret, "-f", jsonSecret, "--set", "replicas=3")
	for _, want := range []string{`password: "Hunter2-s3cret"`, `user: "from-json"`, `replicas: "3"`} {
		if !strings.Contains(out, want) {
			t.Errorf("berth template printed\n%s\nwithout %s", out, want)
		}
	}

	refused := func(t *testing.T, file string, wants ...string) {
		t.Helper()
		_, _, err := berthtest.RunBerth(t, "template", "app", chartDir, "-f", plain, "-f", file)
		if err == nil {
			t.Fatal("berth template succeeded")
		}
		for _, want := range append([]string{"values file " + file}, wants...) {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if strings.Contains(err.Error(), "Hunter2") {
			t.Errorf("the error quotes the plaintext: %v", err)
		}
	}
	t.Run("another key", func(t *testing.T) {
		useAgeKeyFile(t, other.Identity)
		refused(t, secret, "no key at hand decrypts it", "encrypted for age "+key.Recipient, "SOPS_AGE_KEY_FILE")
	})
	t.Run("tampered", func(t *testing.T) {
		useAgeKeyFile(t, key.Identity)
		data, _ := os.ReadFile(secret)
		var kept []string
		for _, l := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(l, "user:") {
				kept = append(kept, l)
			}
		}
		refused(t, write("tampered.yaml", []byte(strings.Join(kept, "\n"))), "MAC does not match", "encrypt it again")
	})
}

// TestInstallSOPSValues (scenario V1): a values file encrypted for the user's age key installs;
// one for a key the user lacks and one whose ciphertext was edited are refused before anything
// changes, naming the file and why; the plaintext is in no error and no Event.
func TestInstallSOPSValues(t *testing.T) {
	env := testenv.New(t)
	chartDir := berthtest.VersionedChart(t, "app", "0.1.0", map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-{{ .Release.Name }}\ndata:\n  password: {{ .Values.password | quote }}\n",
	})
	key, other := berthtest.NewAgeKey(t), berthtest.NewAgeKey(t)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const secret = "Hunter2-v1-secret"
	mine := berthtest.EncryptSOPS(t, []byte("password: "+secret+"\n"), false, key.Recipient)
	ours := write("mine.enc.yaml", mine)
	theirs := write("theirs.enc.yaml", berthtest.EncryptSOPS(t, []byte("password: "+secret+"\n"), false, other.Recipient))
	edited := write("edited.enc.yaml", []byte(strings.Replace(string(mine), "ENC[AES256_GCM,data:", "ENC[AES256_GCM,data:AA", 1)))
	useAgeKeyFile(t, key.Identity)

	for _, tc := range []struct{ release, file, why string }{
		{"theirs", theirs, "no key at hand decrypts it"},
		{"edited", edited, "it was changed after it was encrypted"},
	} {
		_, _, err := berthtest.Berth(t, env, "install", tc.release, chartDir, "-f", tc.file)
		if err == nil || !strings.Contains(err.Error(), tc.file) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("berth install -f %s: %v, want it refused naming the file and %q", tc.file, err, tc.why)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("the error quotes the plaintext: %v", err)
		}
		berthtest.AssertNotRecorded(t, env, tc.release)
	}

	berthtest.MustBerth(t, env, "install", "mine", chartDir, "-f", ours)
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "app-mine", metav1.GetOptions{})
	if err != nil || cm.Data["password"] != secret {
		t.Fatalf("the ConfigMap of the install: %v, %v; want the decrypted password", cm.Data, err)
	}
	events, err := env.Client.CoreV1().Events(env.Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if strings.Contains(e.Message, secret) {
			t.Errorf("Event %s quotes the plaintext: %s", e.Name, e.Message)
		}
	}
}

// TestTemplateErrorMasksEncryptedValues: a template whose error quotes a value that came from an
// encrypted values file prints it masked, in berth template and in berth install alike; a
// value given in clear is quoted as Helm quotes it.
func TestTemplateErrorMasksEncryptedValues(t *testing.T) {
	const secret = "Hunter2-quoted-by-fail"
	chartDir := berthtest.VersionedChart(t, "app", "0.1.0", map[string]string{
		"values.yaml":       "password: none\nplain: none\n",
		"templates/cm.yaml": "{{ fail (printf \"refused: %s and %s\" .Values.password .Values.plain) }}\n",
	})
	key := berthtest.NewAgeKey(t)
	enc := filepath.Join(t.TempDir(), "secrets.enc.yaml")
	if err := os.WriteFile(enc, berthtest.SOPSEncryptCLI(t, []byte("password: "+secret+"\n"), "yaml", key.Recipient), 0o600); err != nil {
		t.Fatal(err)
	}
	useAgeKeyFile(t, key.Identity)
	env := testenv.New(t)
	for _, args := range [][]string{
		{"template", "app", chartDir, "-f", enc, "--set", "plain=in-clear-value"},
		{"install", "app", chartDir, "-f", enc, "--set", "plain=in-clear-value"},
	} {
		_, stderr, err := berthtest.Berth(t, env, args...)
		if err == nil {
			t.Fatalf("berth %s succeeded, want the template's error", args[0])
		}
		msg := err.Error() + stderr
		if strings.Contains(msg, secret) || !strings.Contains(msg, "(masked)") || !strings.Contains(msg, "in-clear-value") {
			t.Errorf("berth %s: %s\nwant the encrypted value masked and the clear one quoted", args[0], msg)
		}
	}
}
