package controller_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// lockedBuffer is a buffer a controller's logger writes to while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestReleaseDecryptsSOPSValues: a values key the sops CLI encrypted for an age key is decrypted
// with the age keys of the Secret its reference names, and released; a wrong key, a missing
// Secret, a document encrypted for someone else, an edited one and one not asked to be decrypted
// are each DecryptionFailed, naming the object, the key, the Secret and the recipients, nothing
// released; the secret value is in no condition, Event or log line.
func TestReleaseDecryptsSOPSValues(t *testing.T) {
	const secret = "Hunter2-sops-in-the-controller"
	env := testenv.New(t)
	installCRD(t, env)
	var logs lockedBuffer
	releasetest.RunController(t, env, controller.Options{
		Namespace: env.Namespace, MetricsBindAddress: "0", CacheDir: t.TempDir(),
		Logger: logr.FromSlogHandler(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	c := startClient(t, env)
	deployer(t, env, "deployer")
	repo := releasetest.ServeCharts(t, settingsChart(t))

	key, other := berthtest.NewAgeKey(t), berthtest.NewAgeKey(t)
	plain := []byte("password: " + secret + "\nreplicas: 3\nnote_unencrypted: kept in clear\n")
	// Encrypted by the sops CLI, as a team would.
	encrypted := berthtest.SOPSEncryptCLIArgs(t, plain, "yaml", []string{"--unencrypted-suffix", "_unencrypted"}, key.Recipient)
	forOther := berthtest.SOPSEncryptCLI(t, plain, "yaml", other.Recipient)
	tampered := bytes.Replace(encrypted, []byte("kept in clear"), []byte("edited by hand"), 1)
	if bytes.Equal(tampered, encrypted) {
		t.Fatal("the clear value to edit is not in the encrypted document")
	}
	createConfigMap(t, env, "sops-values", map[string]string{
		"values.yaml": string(encrypted), "other.yaml": string(forOther), "tampered.yaml": string(tampered),
	}, nil)
	createSecret(t, env, "age", map[string][]byte{"values.agekey": []byte("# the release's key\n" + key.Identity + "\n"), "README": []byte("not a key")})
	createSecret(t, env, "age-other", map[string][]byte{"values.agekey": []byte(other.Identity)})

	releaseOf := func(name, key, keys string, decrypt bool) {
		t.Helper()
		rel := smallestRelease(t, env.Namespace, repo, "deployer")
		rel.Name, rel.Spec.Values = name, nil
		ref := v1alpha1.ValuesReference{Kind: "ConfigMap", Name: "sops-values", Key: key}
		if decrypt {
			ref.Decrypt = &v1alpha1.ValuesDecryption{Provider: "sops", SecretRef: v1alpha1.SecretReference{Name: keys}}
		}
		rel.Spec.ValuesFrom = []v1alpha1.ValuesReference{ref}
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}

	releaseOf("web", "values.yaml", "age", true)
	got := waitFor(t, c, env.Namespace, "web", "is installed with the decrypted values", readyAt(1))
	assertConfig(t, env, "password", secret)
	assertConfig(t, env, "replicas", "3")
	if got.Status.ValuesDigest == "" {
		t.Error("no values digest")
	}
	// The record says which values came encrypted, for berth get values and diff to mask.
	if paths := release.EncryptedValuesOf(berthtest.LastRecord(t, env, "web")); len(paths) != 2 || paths[0][0] != "password" || paths[1][0] != "replicas" {
		t.Errorf("encrypted values recorded %q, want password and replicas (not the value left in clear)", paths)
	}

	for _, tc := range []struct {
		name, key, keys string
		decrypt         bool
		want            []string
	}{
		{"wrong-key", "values.yaml", "age-other", true, []string{"ConfigMap/" + env.Namespace + "/sops-values key values.yaml", "Secret/" + env.Namespace + "/age-other", "no key at hand decrypts it", key.Recipient}},
		{"someone-else", "other.yaml", "age", true, []string{"key other.yaml", "Secret/" + env.Namespace + "/age", other.Recipient}},
		{"tampered", "tampered.yaml", "age", true, []string{"key tampered.yaml", "MAC does not match"}},
		{"no-keys", "values.yaml", "no-such-keys", true, []string{"Secret/" + env.Namespace + "/no-such-keys not found", ".agekey"}},
		{"not-asked", "values.yaml", "", false, []string{"key values.yaml holds a document encrypted with SOPS", "valuesFrom[0].decrypt"}},
	} {
		releaseOf(tc.name, tc.key, tc.keys, tc.decrypt)
		got := waitFor(t, c, env.Namespace, tc.name, "is refused: "+tc.name, notReadyWith(controller.ReasonDecryptionFailed))
		msg := condition(got, controller.ConditionReady).Message
		for _, want := range tc.want {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: Ready message %q does not hold %q", tc.name, msg, want)
			}
		}
		if tc.name != "no-keys" {
			if s := condition(got, controller.ConditionStalled); s == nil || s.Status != metav1.ConditionTrue {
				t.Errorf("%s: Stalled = %v, want True: nothing changes until the values or the keys do", tc.name, s)
			}
		}
		berthtest.AssertNotRecorded(t, env, tc.name)
	}

	// The keys come: the Release that had none is released.
	createSecret(t, env, "no-such-keys", map[string][]byte{"k.agekey": []byte(key.Identity)})
	waitFor(t, c, env.Namespace, "no-keys", "is installed once its keys are there", func(rel *v1alpha1.Release) bool {
		r := condition(rel, controller.ConditionReady)
		return r != nil && r.Reason != controller.ReasonDecryptionFailed
	})

	var list v1alpha1.ReleaseList
	if err := c.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	statuses, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	events, err := env.Client.CoreV1().Events(env.Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var notes strings.Builder
	for _, e := range events.Items {
		notes.WriteString(e.Reason + " " + e.Message + "\n")
	}
	for what, text := range map[string]string{"the Releases' status": string(statuses), "the Events": notes.String(), "the controller's log": logs.String()} {
		if strings.Contains(text, secret) || strings.Contains(text, "AGE-SECRET-KEY") {
			t.Errorf("%s hold the secret value or an age identity", what)
		}
	}
}
