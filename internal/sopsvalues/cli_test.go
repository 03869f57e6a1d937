package sopsvalues_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/sopsvalues"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// The documents the sops CLI encrypts in these tests: each secret value holds "Hunter2", which
// no error may quote.
const (
	cliYAML = "db:\n  user: app\n  password: Hunter2-cli-secret\n  host_unencrypted: db.local\nhosts: [Hunter2-a, b]\nreplicas: 3\n"
	cliJSON = `{"db":{"user":"app","password":"Hunter2-cli-secret"},"replicas":3}`
)

// TestCLIEncryptedDecrypts: documents the real sops CLI encrypted with age, every value or only
// those its options name, decrypt with the user's key (the SOPS CLI's own lookup) and with the
// same key given as an age identity, to the document the sops CLI decrypts them to.
func TestCLIEncryptedDecrypts(t *testing.T) {
	key := berthtest.NewAgeKey(t)
	for _, tc := range []struct {
		name, plain string
		format      sopsvalues.Format
		args        []string
	}{
		{"YAML", cliYAML, sopsvalues.YAML, nil},
		{"JSON", cliJSON, sopsvalues.JSON, nil},
		{"YAML with --encrypted-regex", cliYAML, sopsvalues.YAML, []string{"--encrypted-regex", "^(password|hosts)$"}},
		{"YAML with --unencrypted-regex", cliYAML, sopsvalues.YAML, []string{"--unencrypted-regex", "^(user|replicas)$"}},
		{"JSON with --unencrypted-suffix", `{"db":{"password":"Hunter2-cli-secret","user_clear":"app"}}`, sopsvalues.JSON, []string{"--unencrypted-suffix", "_clear"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := berthtest.SOPSEncryptCLIArgs(t, []byte(tc.plain), string(tc.format), tc.args, key.Recipient)
			if bytes.Contains(enc, []byte("Hunter2")) {
				t.Fatalf("sops left a secret value in clear:\n%s", enc)
			}
			if f, ok := sopsvalues.Detect(enc); !ok || f != tc.format {
				t.Fatalf("Detect = %q, %t; want %q", f, ok, tc.format)
			}
			want, stderr, err := berthtest.SOPSDecryptCLI(t, enc, string(tc.format), key.Identity)
			if err != nil {
				t.Fatalf("sops decrypt: %v\n%s", err, stderr)
			}
			useAgeKey(t, key.Identity)
			got, err := sopsvalues.Decrypt(enc, tc.format, sopsvalues.Keys{})
			if err != nil {
				t.Fatalf("Decrypt with the user's key: %v", err)
			}
			sameDocument(t, got, want)
			keys, err := sopsvalues.AgeKeys([]byte(key.Identity))
			if err != nil {
				t.Fatal(err)
			}
			if got, err = sopsvalues.Decrypt(enc, tc.format, keys); err != nil {
				t.Fatalf("Decrypt with AgeKeys: %v", err)
			}
			sameDocument(t, got, want)
		})
	}
}

// TestSOPSCLIVersion: the sops CLI the tests run is the version of the SOPS library berth
// decrypts with: test/tools/sops/go.mod requires the one berth's go.mod requires.
func TestSOPSCLIVersion(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/getsops/sops/v3 v(\S+)`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("go.mod does not require github.com/getsops/sops/v3")
	}
	stdout, stderr, err := berthtest.RunSOPS(t, "--disable-version-check", "--version")
	if err != nil || strings.TrimSpace(stdout) != "sops "+string(m[1]) {
		t.Fatalf("sops --version = %q, %v (%s); want sops %s: require the same sops version in test/tools/sops/go.mod as in go.mod", stdout, err, stderr, m[1])
	}
}

// TestEncryptSOPSMatchesCLI: what the test helper encrypts with SOPS's library, the sops CLI
// decrypts to the document berth decrypts it to: the helper writes files as the CLI does.
func TestEncryptSOPSMatchesCLI(t *testing.T) {
	key := berthtest.NewAgeKey(t)
	for _, tc := range []struct {
		plain  string
		format sopsvalues.Format
	}{{cliYAML, sopsvalues.YAML}, {cliJSON, sopsvalues.JSON}} {
		enc := berthtest.EncryptSOPS(t, []byte(tc.plain), tc.format == sopsvalues.JSON, key.Recipient)
		want, stderr, err := berthtest.SOPSDecryptCLI(t, enc, string(tc.format), key.Identity)
		if err != nil {
			t.Fatalf("sops decrypt of the helper's %s: %v\n%s", tc.format, err, stderr)
		}
		keys, err := sopsvalues.AgeKeys([]byte(key.Identity))
		if err != nil {
			t.Fatal(err)
		}
		got, err := sopsvalues.Decrypt(enc, tc.format, keys)
		if err != nil {
			t.Fatal(err)
		}
		sameDocument(t, got, want)
	}
}

// sameDocument fails the test when the decrypted document got does not hold the values of want,
// what the sops CLI decrypted (YAML byte for byte; JSON, which the CLI indents, by its values).
func sameDocument(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w any
	if err := yaml.Unmarshal(got, &g); err != nil {
		t.Fatalf("the decrypted document: %v\n%s", err, got)
	}
	if err := yaml.Unmarshal(want, &w); err != nil {
		t.Fatalf("what sops decrypted: %v\n%s", err, want)
	}
	if diff := cmp.Diff(w, g); diff != "" || (!json.Valid(want) && !bytes.Equal(got, want)) {
		t.Fatalf("decrypted\n%s\nwant what sops decrypts\n%s\n(-sops +berth)\n%s", got, want, diff)
	}
}

// TestCLIEncryptedRefused: a document the sops CLI encrypted is refused, with its reason and its
// recipients and never its plaintext, when its ciphertext or a value left in clear was edited,
// when the key at hand is another, when there is none, and when it was encrypted for others
// only; the sops CLI refuses each of them too.
func TestCLIEncryptedRefused(t *testing.T) {
	key, other, third := berthtest.NewAgeKey(t), berthtest.NewAgeKey(t), berthtest.NewAgeKey(t)
	enc := string(berthtest.SOPSEncryptCLI(t, []byte(cliYAML), "yaml", key.Recipient))
	forOthers := berthtest.SOPSEncryptCLI(t, []byte(cliYAML), "yaml", other.Recipient, third.Recipient)
	// The password's ciphertext with its first byte changed (the base64 stays valid).
	data := regexp.MustCompile(`password: ENC\[AES256_GCM,data:(.)`).FindStringSubmatchIndex(enc)
	flipped := "B"
	if enc[data[2]:data[3]] == "B" {
		flipped = "C"
	}
	for _, tc := range []struct {
		name       string
		doc        []byte
		identity   string
		reason     sopsvalues.Reason
		recipients []string
	}{
		{"edited ciphertext", []byte(enc[:data[2]] + flipped + enc[data[3]:]), key.Identity, sopsvalues.ReasonTampered, []string{key.Recipient}},
		{"edited clear value", []byte(strings.Replace(enc, "host_unencrypted: db.local", "host_unencrypted: evil.example", 1)), key.Identity, sopsvalues.ReasonTampered, []string{key.Recipient}},
		{"wrong key", []byte(enc), other.Identity, sopsvalues.ReasonNoKey, []string{key.Recipient}},
		{"no key", []byte(enc), "", sopsvalues.ReasonNoKey, []string{key.Recipient}},
		{"encrypted for others", forOthers, key.Identity, sopsvalues.ReasonNoKey, []string{other.Recipient, third.Recipient}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := berthtest.SOPSDecryptCLI(t, tc.doc, "yaml", tc.identity); err == nil {
				t.Fatal("the sops CLI decrypts it: the case tests nothing")
			}
			useAgeKey(t, tc.identity)
			out, err := sopsvalues.Decrypt(tc.doc, sopsvalues.YAML, sopsvalues.Keys{})
			var se *sopsvalues.Error
			if !errors.As(err, &se) || se.Reason != tc.reason || out != nil {
				t.Fatalf("Decrypt = %q, %v; want nothing and %s", out, err, tc.reason)
			}
			var want []string
			for _, r := range tc.recipients {
				want = append(want, "age "+r)
			}
			if !slices.Equal(se.Recipients, want) {
				t.Errorf("recipients %q, want %q", se.Recipients, want)
			}
			for _, r := range tc.recipients {
				if !strings.Contains(err.Error(), r) {
					t.Errorf("error %q does not name the recipient %s", err, r)
				}
			}
			if strings.Contains(err.Error(), "Hunter2") || strings.Contains(err.Error(), "AGE-SECRET-KEY") {
				t.Errorf("the error quotes a secret: %v", err)
			}
		})
	}
}

// TestCLIEncryptedPaths: EncryptedPaths of a document the sops CLI encrypted names exactly the
// keys it encrypted: all of them, those of --encrypted-regex, all but those of the unencrypted
// suffix.
func TestCLIEncryptedPaths(t *testing.T) {
	key := berthtest.NewAgeKey(t)
	for _, tc := range []struct {
		name   string
		format string
		plain  string
		args   []string
		want   []string
	}{
		{"every value", "yaml", cliYAML, nil, []string{"db.password", "db.user", "hosts", "replicas"}},
		{"JSON", "json", cliJSON, nil, []string{"db.password", "db.user", "replicas"}},
		{"--encrypted-regex", "yaml", cliYAML, []string{"--encrypted-regex", "^(password|hosts)$"}, []string{"db.password", "hosts"}},
		{"--unencrypted-suffix", "yaml", "db:\n  password: x\n  user_clear: app\nport_clear: 5432\n", []string{"--unencrypted-suffix", "_clear"}, []string{"db.password"}},
		{"--unencrypted-regex", "yaml", cliYAML, []string{"--unencrypted-regex", "^(user|replicas)$"}, []string{"db.host_unencrypted", "db.password", "hosts"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := berthtest.SOPSEncryptCLIArgs(t, []byte(tc.plain), tc.format, tc.args, key.Recipient)
			var got []string
			for _, p := range sopsvalues.EncryptedPaths(enc) {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("EncryptedPaths = %q, want %q of\n%s", got, tc.want, enc)
			}
		})
	}
}
