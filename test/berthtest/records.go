package berthtest

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
)

// releaseSecretType is the type of the Secrets in which Helm records releases.
const releaseSecretType = "helm.sh/release.v1"

// LastRecord reads the last recorded revision of a release of the test's namespace, failing the
// test when there is none.
func LastRecord(t testing.TB, env *testenv.Env, name string) *release.Release {
	t.Helper()
	rel, err := release.NewSecretStore(env.Client.CoreV1(), env.Namespace).Last(t.Context(), name)
	if err != nil {
		t.Fatalf("read the record of release %s: %v", name, err)
	}
	return rel
}

// RecordedHook returns the hook named name of a recorded revision, failing the test when the
// revision records no such hook.
func RecordedHook(t testing.TB, rel *release.Release, name string) *release.Hook {
	t.Helper()
	for _, h := range rel.Hooks {
		if h.Name == name {
			return h
		}
	}
	t.Fatalf("release %s revision %d records no hook %s", rel.Name, rel.Version, name)
	return nil
}

// AssertNotRecorded checks that no revision of the release named name is recorded in the test's
// namespace.
func AssertNotRecorded(t testing.TB, env *testenv.Env, name string) {
	t.Helper()
	history, err := release.NewSecretStore(env.Client.CoreV1(), env.Namespace).History(t.Context(), name)
	if err == nil && len(history) > 0 {
		t.Errorf("release %s still has %d recorded revision(s)", name, len(history))
	}
}

// AssertNoRecords checks that no Secret of the test's namespace records a release, of any name.
func AssertNoRecords(t testing.TB, env *testenv.Env) {
	t.Helper()
	if got := recordSecrets(t, env); len(got) > 0 {
		t.Errorf("release records left in namespace %s: %v", env.Namespace, got)
	}
}

// recordSecrets returns the names of the Secrets of the test's namespace that record releases.
func recordSecrets(t testing.TB, env *testenv.Env) []string {
	t.Helper()
	list, err := env.Client.CoreV1().Secrets(env.Namespace).List(t.Context(), metav1.ListOptions{FieldSelector: "type=" + releaseSecretType})
	if err != nil {
		t.Fatalf("list Secrets of type %s: %v", releaseSecretType, err)
	}
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	return names
}
