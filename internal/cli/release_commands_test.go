package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
)

// seedReleases records, in the test's namespace, releases whose names end in token:
// web (revision 1 superseded, 2 deployed), db (failed) and gone (uninstalled).
func seedReleases(t *testing.T, env *testenv.Env, token string) {
	t.Helper()
	epoch := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	c := &chart.Chart{
		Metadata: &chart.Metadata{
			APIVersion: chart.APIVersionV2, Name: "demo", Version: "1.2.3", AppVersion: "4.5.6",
			Annotations:  map[string]string{"category": "demo"},
			Dependencies: []*chart.Dependency{{Name: "redis", Version: "1.0.0"}, {Name: "cache", Version: "2.0.0"}},
		},
		Values: map[string]any{"replicas": 1, "image": map[string]any{"repository": "nginx", "tag": "1.27"}},
	}
	rev := func(name string, version int, status release.Status, desc string) *release.Release {
		return &release.Release{
			Name: name + "-" + token, Namespace: env.Namespace, Version: version, Chart: c,
			Info: &release.Info{
				FirstDeployed: epoch, LastDeployed: epoch.Add(time.Duration(version) * time.Hour),
				Status: status, Description: desc,
			},
			Manifest: fmt.Sprintf("---\n# Source: demo/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%s-v%d\n", name, token, version),
		}
	}
	web1 := rev("web", 1, release.StatusSuperseded, "Install complete")
	web2 := rev("web", 2, release.StatusDeployed, "Upgrade complete")
	web2.Config = map[string]any{"replicas": 3}
	web2.Labels = map[string]string{"team": "blue"}
	web2.Info.Notes = "  Visit http://web.example.com\n"
	web2.Info.RollbackRevision = 1
	web2.Hooks = []*release.Hook{
		{
			Name: "web-migrate", Kind: "Job", Path: "demo/templates/migrate.yaml",
			Manifest: "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: web-migrate",
			Events:   []releasev1.HookEvent{releasev1.HookPreUpgrade},
			LastRun:  releasev1.HookExecution{StartedAt: epoch, CompletedAt: epoch.Add(time.Minute), Phase: releasev1.HookPhaseSucceeded},
		},
		{
			Name: "web-test", Kind: "Pod", Path: "demo/templates/tests/test.yaml",
			Manifest: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web-test",
			Events:   []releasev1.HookEvent{releasev1.HookTest},
			LastRun:  releasev1.HookExecution{StartedAt: epoch.Add(2 * time.Hour), CompletedAt: epoch.Add(3 * time.Hour), Phase: releasev1.HookPhaseFailed},
		},
	}
	db := rev("db", 1, release.StatusFailed, "Release \"db\" failed: timed out")
	gone := rev("gone", 1, release.StatusUninstalled, "Uninstallation complete")

	store := release.NewSecretStore(env.Client.CoreV1(), env.Namespace)
	for _, r := range []*release.Release{web1, web2, db, gone} {
		if err := store.Create(t.Context(), r); err != nil {
			t.Fatalf("record %s revision %d: %v", r.Name, r.Version, err)
		}
	}
}

// berthIn runs berth against the test's cluster and namespace.
func berthIn(t *testing.T, env *testenv.Env, args ...string) (string, error) {
	t.Helper()
	stdout, _, err := run(t, append(args, "--kubeconfig", env.Kubeconfig, "-n", env.Namespace)...)
	return stdout, err
}

var helmBinary = sync.OnceValues(func() (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	// Building is cached; -n then prints the cached binary's path.
	for _, args := range [][]string{{"tool", "helm", "version"}, {"tool", "-n", "helm"}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if args[1] == "-n" {
			return strings.TrimSpace(string(out)), nil
		}
	}
	return "", nil
})

// helmIn runs Helm v4's own binary against the test's cluster and namespace.
func helmIn(t *testing.T, env *testenv.Env, args ...string) (string, error) {
	t.Helper()
	bin, err := helmBinary()
	if err != nil {
		t.Fatalf("build helm: %v", err)
	}
	home := t.TempDir()
	cmd := exec.Command(bin, append(args, "--kubeconfig", env.Kubeconfig, "-n", env.Namespace)...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home, "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// resourcesSection is the RESOURCES part of helm status, which berth status does not print.
var resourcesSection = regexp.MustCompile(`(?s)RESOURCES:\n.*?(TEST SUITE:)`)

// withoutResources removes what Helm's status adds from the cluster: the RESOURCES section of
// the table and info.resources of JSON and YAML.
func withoutResources(t *testing.T, args []string, out string) string {
	t.Helper()
	if len(args) == 0 || args[0] != "status" {
		return out
	}
	switch format(args) {
	case "json", "yaml":
		var v map[string]any
		if err := yaml.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("parse %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if info, ok := v["info"].(map[string]any); ok {
			delete(info, "resources")
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	return resourcesSection.ReplaceAllString(out, "$1")
}

func format(args []string) string {
	for i, a := range args {
		if (a == "-o" || a == "--output") && i+1 < len(args) {
			return args[i+1]
		}
	}
	return "table"
}

// TestReleaseCommandsMatchHelm runs the read-only commands of berth and of Helm v4 on the same
// records and expects the same output.
func TestReleaseCommandsMatchHelm(t *testing.T) {
	env := testenv.New(t)
	token := env.Namespace[len(env.Namespace)-5:]
	seedReleases(t, env, token)
	web, db, gone := "web-"+token, "db-"+token, "gone-"+token

	commands := [][]string{
		{"status", web},
		{"status", web, "--revision", "1"},
		{"status", db},
		{"status", gone},
		{"status", web, "-o", "json"},
		{"status", web, "-o", "yaml"},
		{"list"},
		{"list", "-o", "json"},
		{"list", "-o", "yaml"},
		{"list", "--deployed"},
		{"list", "--failed", "--uninstalled"},
		{"list", "--superseded"},
		{"list", "--pending"},
		{"list", "-q"},
		{"list", "-q", "-o", "json"},
		{"list", "-d", "-r"},
		{"list", "--max", "1", "--offset", "1"},
		{"list", "--no-headers", "--time-format", "2006-01-02"},
		{"list", "-f", "^web"},
		{"list", "-A", "-f", token},
		{"history", web},
		{"history", web, "--max", "1"},
		{"history", web, "--show-rollback-revision"},
		{"history", web, "-o", "json"},
		{"history", web, "-o", "yaml"},
		{"get", "manifest", web},
		{"get", "manifest", web, "--revision", "1"},
		{"get", "values", web},
		{"get", "values", web, "-a"},
		{"get", "values", web, "-o", "json"},
		{"get", "values", web, "-a", "-o", "yaml"},
		{"get", "values", db},
		{"get", "notes", web},
		{"get", "notes", db},
		{"get", "hooks", web},
		{"get", "hooks", web, "--revision", "1"},
		{"get", "notes", web, "--revision", "1"},
		{"get", "all", web},
		{"get", "all", web, "--revision", "1"},
		{"get", "all", db},
		{"get", "all", web, "--template", "{{.Release.Name}} {{.Release.Version}} {{.Release.Info.Status}}"},
		{"get", "metadata", web},
		{"get", "metadata", web, "--revision", "1"},
		{"get", "metadata", web, "-o", "json"},
		{"get", "metadata", web, "-o", "yaml"},
	}
	for _, args := range commands {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			want, err := helmIn(t, env, args...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := berthIn(t, env, args...)
			if err != nil {
				t.Fatalf("berth %s: %v", strings.Join(args, " "), err)
			}
			if w, g := withoutResources(t, args, want), withoutResources(t, args, got); g != w {
				t.Errorf("berth %s printed\n%s\nhelm printed\n%s", strings.Join(args, " "), g, w)
			}
		})
	}
}

// TestReleaseCommandsOutput checks the significant fields of each command's output.
func TestReleaseCommandsOutput(t *testing.T) {
	env := testenv.New(t)
	token := env.Namespace[len(env.Namespace)-5:]
	seedReleases(t, env, token)
	web := "web-" + token

	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"status", web}, []string{
			"NAME: " + web + "\n", "LAST DEPLOYED: Wed May  1 14:00:00 2024\n", "NAMESPACE: " + env.Namespace + "\n",
			"STATUS: deployed\n", "REVISION: 2\n", "DESCRIPTION: Upgrade complete\n", "TEST SUITE:     web-test\n",
			"Phase:          Failed\n", "NOTES:\nVisit http://web.example.com\n",
		}},
		{[]string{"status", web, "--revision", "1"}, []string{"STATUS: superseded\n", "REVISION: 1\n", "TEST SUITE: None\n"}},
		{[]string{"status", web, "--show-desc"}, []string{"DESCRIPTION: Upgrade complete\n"}},
		{[]string{"list"}, []string{"NAME", "APP VERSION", web, "demo-1.2.3", "4.5.6", "failed", "uninstalled", "deployed"}},
		{[]string{"list", "--deployed", "-o", "json"}, []string{`"name":"` + web + `"`, `"revision":"2"`, `"status":"deployed"`}},
		{[]string{"history", web}, []string{"REVISION", "DESCRIPTION", "superseded", "Install complete", "Upgrade complete"}},
		{[]string{"get", "values", web}, []string{"USER-SUPPLIED VALUES:\nreplicas: 3\n"}},
		{[]string{"get", "values", web, "-a"}, []string{"COMPUTED VALUES:\n", "repository: nginx", "replicas: 3"}},
		{[]string{"get", "manifest", web}, []string{"name: " + web + "-v2\n"}},
		{[]string{"get", "hooks", web}, []string{"# Source: demo/templates/migrate.yaml\n", "# Source: demo/templates/tests/test.yaml\n"}},
		{[]string{"get", "notes", web}, []string{"NOTES:\n"}},
		{[]string{"get", "all", web}, []string{
			"NAME: " + web + "\n", "CHART: demo\nVERSION: 1.2.3\nAPP_VERSION: 4.5.6\n", "USER-SUPPLIED VALUES:\nreplicas: 3\n",
			"COMPUTED VALUES:\n", "repository: nginx", "HOOKS:\n", "# Source: demo/templates/migrate.yaml\n",
			"MANIFEST:\n", "name: " + web + "-v2\n", "NOTES:\nVisit http://web.example.com\n",
		}},
		{[]string{"get", "metadata", web}, []string{
			"CHART: demo\n", "ANNOTATIONS: category=demo\n", "team=blue", "DEPENDENCIES: cache,redis\n",
			"REVISION: 2\n", "STATUS: deployed\n", "DEPLOYED_AT: 2024-05-01T14:00:00Z\n",
		}},
		{[]string{"get", "metadata", web, "-o", "json"}, []string{`"appVersion":"4.5.6"`, `"team":"blue"`, `"revision":2`}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := berthIn(t, env, tt.args...)
			if err != nil {
				t.Fatalf("berth %s: %v", strings.Join(tt.args, " "), err)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("berth %s printed\n%s\nwithout %q", strings.Join(tt.args, " "), got, w)
				}
			}
		})
	}

	t.Run("history of the last revisions, oldest first", func(t *testing.T) {
		got, err := berthIn(t, env, "history", web, "-o", "json", "--max", "1")
		if err != nil {
			t.Fatal(err)
		}
		var entries []map[string]any
		if err := json.Unmarshal([]byte(got), &entries); err != nil {
			t.Fatalf("parse %s: %v", got, err)
		}
		want := []map[string]any{{
			"revision": float64(2), "updated": "2024-05-01T14:00:00Z", "status": "deployed", "chart": "demo-1.2.3",
			"app_version": "4.5.6", "rollback_revision": float64(1), "description": "Upgrade complete",
		}}
		if !reflect.DeepEqual(entries, want) {
			t.Errorf("history -o json --max 1 = %v, want %v", entries, want)
		}
	})
}

func TestReleaseNotFound(t *testing.T) {
	env := testenv.New(t)
	for _, args := range [][]string{
		{"status", "nope"},
		{"status", "nope", "--revision", "3"},
		{"history", "nope"},
		{"get", "manifest", "nope"},
		{"get", "values", "nope"},
		{"get", "notes", "nope"},
		{"get", "hooks", "nope"},
		{"get", "all", "nope"},
		{"get", "metadata", "nope"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, err := berthIn(t, env, args...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range []string{"release: not found", `"nope"`, env.Namespace} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

func TestUnreachableCluster(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := dir + "/config"
	const config = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: here, context: {cluster: c, user: u}}]
current-context: here
`
	if err := os.WriteFile(kubeconfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"list", "--kubeconfig", kubeconfig}, []string{"unreachable", kubeconfig, `context "here"`}},
		{[]string{"list", "--kubeconfig", kubeconfig, "--kube-context", "elsewhere"}, []string{kubeconfig, `"elsewhere"`}},
		{[]string{"list", "--kubeconfig", dir + "/missing"}, []string{dir + "/missing"}},
	} {
		_, _, err := run(t, tt.args...)
		if err == nil {
			t.Errorf("berth %s: no error", strings.Join(tt.args, " "))
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("berth %s: error %q does not say %q", strings.Join(tt.args, " "), err, w)
			}
		}
	}
}
