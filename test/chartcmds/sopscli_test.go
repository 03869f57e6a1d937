package chartcmds

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// useSOPSAgeKey makes sops's key lookup find only identity, in SOPS_AGE_KEY (nothing when it is
// empty): no key file, no keys.txt of the user's.
func useSOPSAgeKey(t *testing.T, identity string) {
	t.Helper()
	for _, name := range []string{"SOPS_AGE_KEY", "SOPS_AGE_KEY_FILE", "SOPS_AGE_KEY_CMD", "SOPS_AGE_SSH_PRIVATE_KEY_FILE"} {
		t.Setenv(name, "") // restored when the test ends
		os.Unsetenv(name)
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	if identity != "" {
		t.Setenv("SOPS_AGE_KEY", identity)
	}
}

// useUserKeysFile puts identity in the user's own sops/age/keys.txt, under HOME's .config (with
// no XDG_CONFIG_HOME), and nowhere else.
func useUserKeysFile(t *testing.T, identity string) {
	t.Helper()
	useSOPSAgeKey(t, "")
	t.Setenv("XDG_CONFIG_HOME", "")
	os.Unsetenv("XDG_CONFIG_HOME")
	dir := filepath.Join(os.Getenv("HOME"), ".config", "sops", "age")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "keys.txt"), []byte(identity+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// sopsCLIChart renders the values the tests encrypt into a ConfigMap.
func sopsCLIChart(t *testing.T) string {
	t.Helper()
	return berthtest.VersionedChart(t, "app", "0.1.0", map[string]string{
		"values.yaml":       "password: none\nuser: none\nreplicas: 1\nhost_unencrypted: none\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  password: {{ .Values.password | quote }}\n  user: {{ .Values.user | quote }}\n  replicas: {{ .Values.replicas | quote }}\n  host: {{ .Values.host_unencrypted | quote }}\n",
	})
}

// TestTemplateCLIEncryptedValues: values files the real sops CLI encrypted with age, YAML and
// JSON, every value or only those --encrypted-regex names, are decrypted with the user's key (in
// a key file or in SOPS_AGE_KEY) and merged in the order of the flags.
func TestTemplateCLIEncryptedValues(t *testing.T) {
	chartDir := sopsCLIChart(t)
	key := berthtest.NewAgeKey(t)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	yamlFile := write("secrets.enc.yaml", berthtest.SOPSEncryptCLI(t, []byte("password: Hunter2-cli-yaml\nuser: from-yaml\nhost_unencrypted: db.local\n"), "yaml", key.Recipient))
	jsonFile := write("secrets.enc.json", berthtest.SOPSEncryptCLI(t, []byte(`{"user":"from-json","replicas":4}`), "json", key.Recipient))
	regexFile := write("partly.yaml", berthtest.SOPSEncryptCLIArgs(t, []byte("password: Hunter2-cli-regex\nreplicas: 5\n"), "yaml",
		[]string{"--encrypted-regex", "^password$"}, key.Recipient))
	if data, _ := os.ReadFile(regexFile); !strings.Contains(string(data), "replicas: 5") {
		t.Fatalf("sops encrypted what --encrypted-regex leaves out:\n%s", data)
	}

	for _, tc := range []struct {
		name  string
		use   func(t *testing.T)
		files []string
		want  []string
	}{
		{"YAML then JSON, key file", func(t *testing.T) { useAgeKeyFile(t, key.Identity) }, []string{yamlFile, jsonFile},
			[]string{`password: "Hunter2-cli-yaml"`, `user: "from-json"`, `replicas: "4"`, `host: "db.local"`}},
		{"JSON then YAML, SOPS_AGE_KEY", func(t *testing.T) { useSOPSAgeKey(t, key.Identity) }, []string{jsonFile, yamlFile},
			[]string{`password: "Hunter2-cli-yaml"`, `user: "from-yaml"`, `replicas: "4"`}},
		{"~/.config/sops/age/keys.txt", func(t *testing.T) { useUserKeysFile(t, key.Identity) }, []string{yamlFile},
			[]string{`password: "Hunter2-cli-yaml"`, `user: "from-yaml"`}},
		{"--encrypted-regex", func(t *testing.T) { useSOPSAgeKey(t, key.Identity) }, []string{yamlFile, regexFile},
			[]string{`password: "Hunter2-cli-regex"`, `user: "from-yaml"`, `replicas: "5"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.use(t)
			args := []string{"template", "app", chartDir}
			for _, f := range tc.files {
				args = append(args, "-f", f)
			}
			out := mustBerth(t, args...)
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("berth template printed\n%s\nwithout %s", out, want)
				}
			}
		})
	}
}

// TestTemplateCLIEncryptedRefused: a values file the real sops CLI encrypted is refused, naming
// the file, why, its recipients and what to do, with nothing rendered and its plaintext nowhere in
// berth's output or error, when its ciphertext or a value left in clear was edited, when the key
// at hand is another, when there is none, and when it was encrypted for others only.
func TestTemplateCLIEncryptedRefused(t *testing.T) {
	chartDir := sopsCLIChart(t)
	key, other, third := berthtest.NewAgeKey(t), berthtest.NewAgeKey(t), berthtest.NewAgeKey(t)
	const plain = "password: Hunter2-cli-refused\nhost_unencrypted: db.local\n"
	enc := string(berthtest.SOPSEncryptCLI(t, []byte(plain), "yaml", key.Recipient))
	dir := t.TempDir()
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// The password's ciphertext with its first byte changed (the base64 stays valid).
	at := regexp.MustCompile(`password: ENC\[AES256_GCM,data:(.)`).FindStringSubmatchIndex(enc)
	flipped := "B"
	if enc[at[2]:at[3]] == "B" {
		flipped = "C"
	}
	ours := write("ours.enc.yaml", enc)
	noKey := []string{"no key at hand decrypts it", "SOPS_AGE_KEY_FILE"}

	for _, tc := range []struct {
		name, file, identity string
		recipients, why      []string
	}{
		{"edited ciphertext", write("edited.enc.yaml", enc[:at[2]]+flipped+enc[at[3]:]), key.Identity,
			[]string{key.Recipient}, []string{"it was changed after it was encrypted", "encrypt it again"}},
		{"edited clear value", write("tampered.enc.yaml", strings.Replace(enc, "host_unencrypted: db.local", "host_unencrypted: evil.example", 1)), key.Identity,
			[]string{key.Recipient}, []string{"its MAC does not match its content", "encrypt it again"}},
		{"wrong key", ours, other.Identity, []string{key.Recipient}, noKey},
		{"no key", ours, "", []string{key.Recipient}, noKey},
		{"encrypted for others", write("theirs.enc.yaml", string(berthtest.SOPSEncryptCLI(t, []byte(plain), "yaml", other.Recipient, third.Recipient))), key.Identity,
			[]string{other.Recipient, third.Recipient}, noKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			useSOPSAgeKey(t, tc.identity)
			stdout, stderr, err := berthtest.RunBerth(t, "template", "app", chartDir, "-f", tc.file)
			if err == nil {
				t.Fatalf("berth template succeeded:\n%s", stdout)
			}
			if stdout != "" {
				t.Errorf("berth template rendered\n%s\nfrom a file it refused", stdout)
			}
			wants := append([]string{"values file " + tc.file}, tc.why...)
			for _, r := range tc.recipients {
				wants = append(wants, "age "+r)
			}
			for _, want := range wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			for _, text := range []string{stdout, stderr, err.Error()} {
				if strings.Contains(text, "Hunter2") || strings.Contains(text, "AGE-SECRET-KEY") {
					t.Errorf("berth's output or error quotes a secret: %s", text)
				}
			}
		})
	}
}

// TestInstallCLIEncryptedValues: a values file the real sops CLI encrypted with age installs
// with the user's key, its decrypted value in the release's objects and in no Event; the same
// file with no key at hand is refused before any record, naming the file and its recipient.
func TestInstallCLIEncryptedValues(t *testing.T) {
	env := testenv.New(t)
	chartDir := berthtest.VersionedChart(t, "app", "0.1.0", map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-{{ .Release.Name }}\ndata:\n  password: {{ .Values.password | quote }}\n",
	})
	key := berthtest.NewAgeKey(t)
	const secret = "Hunter2-cli-install"
	file := filepath.Join(t.TempDir(), "secrets.enc.yaml")
	if err := os.WriteFile(file, berthtest.SOPSEncryptCLI(t, []byte("password: "+secret+"\n"), "yaml", key.Recipient), 0o600); err != nil {
		t.Fatal(err)
	}

	useSOPSAgeKey(t, "")
	_, stderr, err := berthtest.Berth(t, env, "install", "nokey", chartDir, "-f", file)
	if err == nil || !strings.Contains(err.Error(), "values file "+file) || !strings.Contains(err.Error(), "age "+key.Recipient) {
		t.Errorf("berth install with no key: %v, want it refused naming the file and its recipient", err)
	}
	if err != nil && strings.Contains(err.Error()+stderr, secret) {
		t.Errorf("the refusal quotes the plaintext: %v\n%s", err, stderr)
	}
	berthtest.AssertNotRecorded(t, env, "nokey")

	useAgeKeyFile(t, key.Identity)
	_, stderr = berthtest.MustBerth(t, env, "install", "withkey", chartDir, "-f", file)
	if strings.Contains(stderr, secret) {
		t.Errorf("berth install printed the plaintext:\n%s", stderr)
	}
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "app-withkey", metav1.GetOptions{})
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
