package sopsvalues_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/sopsvalues"
	"github.com/berthdev/berth/test/berthtest"
)

const plain = "db:\n  user: app\n  password: Hunter2-very-secret\nreplicas: 3\n"

// useAgeKey makes the SOPS CLI's own key lookup find only the identity given: SOPS_AGE_KEY, and
// no keys.txt of the user's.
func useAgeKey(t *testing.T, identity string) {
	for _, name := range []string{"SOPS_AGE_KEY", "SOPS_AGE_KEY_FILE", "SOPS_AGE_KEY_CMD", "SOPS_AGE_SSH_PRIVATE_KEY_FILE", "SOPS_AGE_RECIPIENTS"} {
		t.Setenv(name, "") // restored when the test ends
		os.Unsetenv(name)
	}
	if identity != "" {
		t.Setenv("SOPS_AGE_KEY", identity)
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
}

func TestDetect(t *testing.T) {
	key := berthtest.NewAgeKey(t)
	for _, tc := range []struct {
		name string
		data []byte
		want sopsvalues.Format
	}{
		{"encrypted YAML", berthtest.EncryptSOPS(t, []byte(plain), false, key.Recipient), sopsvalues.YAML},
		{"encrypted JSON", berthtest.EncryptSOPS(t, []byte(`{"db":{"password":"x"}}`), true, key.Recipient), sopsvalues.JSON},
		{"plain values", []byte(plain), ""},
		{"a key named sops", []byte("sops:\n  enabled: true\n"), ""},
		{"a sops list", []byte("sops: [1, 2]\n"), ""},
		{"not YAML", []byte("sops: {mac: [\n"), ""},
		{"metadata through an alias", []byte("m: &m {mac: x, lastmodified: \"2026-01-01T00:00:00Z\"}\nsops: *m\n"), sopsvalues.YAML},
		{"a MAC that is a number", []byte("sops: {mac: 1, lastmodified: \"2026-01-01T00:00:00Z\"}\n"), ""},
		{"a list of documents", []byte("- sops: {mac: x, lastmodified: y}\n"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := sopsvalues.Detect(tc.data)
			if got != tc.want || ok != (tc.want != "") {
				t.Fatalf("Detect = %q, %t; want %q", got, ok, tc.want)
			}
		})
	}
}

func TestDecrypt(t *testing.T) {
	key, other := berthtest.NewAgeKey(t), berthtest.NewAgeKey(t)
	encrypted := berthtest.EncryptSOPS(t, []byte(plain), false, key.Recipient)
	if bytes.Contains(encrypted, []byte("Hunter2")) {
		t.Fatal("the encrypted document holds the plaintext")
	}

	t.Run("YAML", func(t *testing.T) {
		useAgeKey(t, key.Identity)
		out, err := sopsvalues.Decrypt(encrypted, sopsvalues.YAML, sopsvalues.Keys{})
		if err != nil {
			t.Fatal(err)
		}
		var got, want map[string]any
		if err := yaml.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		_ = yaml.Unmarshal([]byte(plain), &want)
		if gy, _ := yaml.Marshal(got); string(gy) != func() string { w, _ := yaml.Marshal(want); return string(w) }() {
			t.Fatalf("decrypted\n%s\nwant\n%s", out, plain)
		}
	})
	t.Run("JSON", func(t *testing.T) {
		useAgeKey(t, key.Identity)
		enc := berthtest.EncryptSOPS(t, []byte(`{"db":{"password":"Hunter2"}}`), true, key.Recipient)
		out, err := sopsvalues.Decrypt(enc, sopsvalues.JSON, sopsvalues.Keys{})
		if err != nil || !bytes.Contains(out, []byte(`"password": "Hunter2"`)) {
			t.Fatalf("decrypted %s, %v", out, err)
		}
	})
	t.Run("a key file", func(t *testing.T) {
		useAgeKey(t, "")
		path := filepath.Join(t.TempDir(), "keys.txt")
		if err := os.WriteFile(path, []byte("# a test key\n"+key.Identity+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("SOPS_AGE_KEY_FILE", path)
		if _, err := sopsvalues.Decrypt(encrypted, sopsvalues.YAML, sopsvalues.Keys{}); err != nil {
			t.Fatal(err)
		}
	})

	refused := func(t *testing.T, data []byte, reason sopsvalues.Reason) *sopsvalues.Error {
		t.Helper()
		out, err := sopsvalues.Decrypt(data, sopsvalues.YAML, sopsvalues.Keys{})
		var se *sopsvalues.Error
		if !errors.As(err, &se) || se.Reason != reason {
			t.Fatalf("got %v, want %s", err, reason)
		}
		if out != nil || strings.Contains(err.Error(), "Hunter2") {
			t.Fatalf("a refused document gave %q, error %q", out, err)
		}
		return se
	}
	t.Run("another key", func(t *testing.T) {
		useAgeKey(t, other.Identity)
		se := refused(t, encrypted, sopsvalues.ReasonNoKey)
		if len(se.Recipients) != 1 || !strings.Contains(se.Error(), key.Recipient) {
			t.Fatalf("%v: want the recipient %s named", se, key.Recipient)
		}
	})
	t.Run("no key", func(t *testing.T) {
		useAgeKey(t, "")
		refused(t, encrypted, sopsvalues.ReasonNoKey)
	})
	t.Run("tampered", func(t *testing.T) {
		useAgeKey(t, key.Identity)
		var lines []string
		for _, l := range strings.Split(string(encrypted), "\n") {
			if !strings.HasPrefix(l, "replicas:") {
				lines = append(lines, l)
			}
		}
		refused(t, []byte(strings.Join(lines, "\n")), sopsvalues.ReasonTampered)
	})
	t.Run("swapped values", func(t *testing.T) {
		useAgeKey(t, key.Identity)
		var user, pass string
		for _, l := range strings.Split(string(encrypted), "\n") {
			switch {
			case strings.HasPrefix(l, "    user: "):
				user = strings.TrimPrefix(l, "    user: ")
			case strings.HasPrefix(l, "    password: "):
				pass = strings.TrimPrefix(l, "    password: ")
			}
		}
		swapped := strings.NewReplacer(user, pass, pass, user).Replace(string(encrypted))
		refused(t, []byte(swapped), sopsvalues.ReasonTampered)
	})
}

// TestAgeKeys: keys given as age identities decrypt what was encrypted for them, and only with
// them: the environment's keys are not asked, another identity decrypts nothing, and a document
// whose data key is held by a cloud KMS is refused as such.
func TestAgeKeys(t *testing.T) {
	key, other := berthtest.NewAgeKey(t), berthtest.NewAgeKey(t)
	encrypted := berthtest.EncryptSOPS(t, []byte(plain), false, key.Recipient)
	useAgeKey(t, key.Identity) // in the environment, never read by AgeKeys

	decrypt := func(data []byte, identities ...[]byte) ([]byte, error) {
		keys, err := sopsvalues.AgeKeys(identities...)
		if err != nil {
			t.Fatal(err)
		}
		return sopsvalues.Decrypt(data, sopsvalues.YAML, keys)
	}
	if out, err := decrypt(encrypted, []byte("# ci\n"+other.Identity+"\n"), []byte(key.Identity)); err != nil || !bytes.Contains(out, []byte("Hunter2")) {
		t.Fatalf("decrypt with the identity: %s, %v", out, err)
	}
	var se *sopsvalues.Error
	if _, err := decrypt(encrypted, []byte(other.Identity)); !errors.As(err, &se) || se.Reason != sopsvalues.ReasonNoKey {
		t.Fatalf("another identity: %v, want NoKey", err)
	}
	if _, err := decrypt(encrypted); !errors.As(err, &se) || se.Reason != sopsvalues.ReasonNoKey {
		t.Fatalf("no identity: %v, want NoKey (not the environment's key)", err)
	}
	if _, err := sopsvalues.AgeKeys([]byte("AGE-SECRET-KEY-1NOTAKEY")); err == nil || strings.Contains(err.Error(), "NOTAKEY") {
		t.Fatalf("a malformed identity: %v, want an error that does not quote it", err)
	}

	var doc map[string]any
	if err := yaml.Unmarshal(encrypted, &doc); err != nil {
		t.Fatal(err)
	}
	meta := doc["sops"].(map[string]any)
	delete(meta, "age")
	meta["kms"] = []any{map[string]any{"arn": "arn:aws:kms:eu-west-1:111122223333:key/berth-test", "enc": "AQICAHg=", "created_at": "2026-01-01T00:00:00Z", "aws_profile": ""}}
	kms, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decrypt(kms, []byte(key.Identity)); !errors.As(err, &se) || se.Reason != sopsvalues.ReasonKeyRefused || !strings.Contains(err.Error(), "arn:aws:kms:eu-west-1:111122223333:key/berth-test") {
		t.Fatalf("a KMS document: %v, want KeyRefused naming the key", err)
	}

	// Allowed, the cloud KMS key is asked (and, with no cloud credentials here, fails): the
	// document is not refused for its kind.
	for _, name := range []string{"AWS_EC2_METADATA_DISABLED", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"} {
		t.Setenv(name, "")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-a-secret")
	t.Setenv("AWS_ENDPOINT_URL_KMS", "http://127.0.0.1:1")
	keys, err := sopsvalues.AgeKeys([]byte(key.Identity))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sopsvalues.Decrypt(kms, sopsvalues.YAML, keys.WithCloudKMS()); !errors.As(err, &se) || se.Reason != sopsvalues.ReasonNoKey {
		t.Fatalf("a KMS document with cloud KMS allowed: %v, want NoKey", err)
	}
	// Cloud KMS allowed still reads no age key of the environment.
	if _, err := sopsvalues.Decrypt(encrypted, sopsvalues.YAML, sopsvalues.Keys{}.WithCloudKMS()); !errors.As(err, &se) || se.Reason != sopsvalues.ReasonNoKey {
		t.Fatalf("cloud KMS only, age key in the environment: %v, want NoKey", err)
	}
}

func TestTooManyRecipients(t *testing.T) {
	var recipients []string
	for range sopsvalues.MaxRecipients + 1 {
		recipients = append(recipients, berthtest.NewAgeKey(t).Recipient)
	}
	key := berthtest.NewAgeKey(t)
	encrypted := berthtest.EncryptSOPS(t, []byte(plain), false, append(recipients, key.Recipient)...)
	keys, err := sopsvalues.AgeKeys([]byte(key.Identity))
	if err != nil {
		t.Fatal(err)
	}
	var se *sopsvalues.Error
	if _, err := sopsvalues.Decrypt(encrypted, sopsvalues.YAML, keys); !errors.As(err, &se) || se.Reason != sopsvalues.ReasonMalformed || !strings.Contains(err.Error(), "recipients") {
		t.Fatalf("Decrypt = %v, want Malformed for its recipients", err)
	}
}
