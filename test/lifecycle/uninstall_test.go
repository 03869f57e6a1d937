package lifecycle

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/cli"
	berthlifecycle "github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// oneConfigMap is a chart of one ConfigMap named after its release.
var oneConfigMap = map[string]string{
	"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {a: b}\n",
}

func TestUninstallSeveralReleases(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "one", oneConfigMap)
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		berthtest.MustBerth(t, env, "install", name, chart)
	}

	t.Run("a missing release fails, the others are uninstalled", func(t *testing.T) {
		stdout, stderr, err := berthtest.Berth(t, env, "uninstall", "a", "missing", "b")
		if cli.ExitCode(err) != 1 || !strings.Contains(err.Error(), `"missing"`) {
			t.Fatalf("uninstall a missing b: exit %d (%v), want 1 naming the missing release\n%s", cli.ExitCode(err), err, stderr)
		}
		if want := "release \"a\" uninstalled\nrelease \"b\" uninstalled\n"; stdout != want {
			t.Errorf("uninstall a missing b printed %q, want %q", stdout, want)
		}
		berthtest.AssertNotRecorded(t, env, "a")
		berthtest.AssertNotRecorded(t, env, "b")
		berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "a", "b")
	})

	t.Run("--ignore-not-found", func(t *testing.T) {
		stdout, _ := berthtest.MustBerth(t, env, "uninstall", "missing", "--ignore-not-found")
		if want := "release \"missing\" uninstalled\n"; stdout != want {
			t.Errorf("uninstall missing --ignore-not-found printed %q, want %q", stdout, want)
		}
	})

	t.Run("--keep-history --description", func(t *testing.T) {
		berthtest.MustBerth(t, env, "uninstall", "c", "--keep-history", "--description", "retired for good")
		rel := berthtest.LastRecord(t, env, "c")
		if rel.Info.Status != release.StatusUninstalled || rel.Info.Description != "retired for good" {
			t.Errorf("release c: status %q, description %q; want uninstalled, %q", rel.Info.Status, rel.Info.Description, "retired for good")
		}
		berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "c")
	})

	t.Run("-o json of several releases is a list", func(t *testing.T) {
		stdout, _ := berthtest.MustBerth(t, env, "uninstall", "f", "g", "-o", "json")
		var results []berthlifecycle.UninstallResult
		if err := json.Unmarshal([]byte(stdout), &results); err != nil {
			t.Fatalf("uninstall f g -o json: %v\n%s", err, stdout)
		}
		if len(results) != 2 || results[0].Name != "f" || results[1].Name != "g" || len(results[1].Deleted) != 1 {
			t.Errorf("uninstall f g -o json printed %s, want the results of f and g, each with its ConfigMap deleted", stdout)
		}
		berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "f", "g")
	})

	t.Run("a blocked release does not stop the others", func(t *testing.T) {
		cms := env.Client.CoreV1().ConfigMaps(env.Namespace)
		hold := `{"metadata":{"finalizers":["example.com/hold"]}}`
		if _, err := cms.Patch(t.Context(), "d", types.MergePatchType, []byte(hold), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = cms.Patch(t.Context(), "d", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		})
		stdout, stderr, err := berthtest.Berth(t, env, "uninstall", "d", "e", "--timeout", "5s")
		if cli.ExitCode(err) != cli.ExitBlocked {
			t.Fatalf("uninstall d e: exit %d (%v), want %d\n%s", cli.ExitCode(err), err, cli.ExitBlocked, stderr)
		}
		if !strings.Contains(err.Error(), "example.com/hold") {
			t.Errorf("error %q does not name the finalizer", err)
		}
		if !strings.Contains(stdout, `release "d" is not uninstalled`) || !strings.Contains(stdout, "release \"e\" uninstalled\n") {
			t.Errorf("uninstall d e printed\n%s\nwant d reported as not uninstalled and e as uninstalled", stdout)
		}
		berthtest.AssertNotRecorded(t, env, "e")

		// A failure that is not a block makes the exit code 1.
		_, _, err = berthtest.Berth(t, env, "uninstall", "d", "missing", "--timeout", "5s")
		if cli.ExitCode(err) != 1 {
			t.Errorf("uninstall d missing: exit %d (%v), want 1", cli.ExitCode(err), err)
		}
	})
}
