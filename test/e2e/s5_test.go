package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// webChart is a release whose Deployment has dependents (a ReplicaSet and its Pods).
var webChart = map[string]string{
	"templates/deployment.yaml": `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: example.invalid/web}]
`,
	"templates/settings.yaml": `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data: {color: blue}
`,
}

var deploymentDeletes = []admissionregistrationv1.RuleWithOperations{testenv.Rule(
	[]admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
	[]string{"apps"}, []string{"v1"}, []string{"deployments"},
)}

// S5: an admission webhook with failurePolicy Fail that is down, hangs or denies blocks the
// deletion of the release's Deployment. berth must not report success: it exits with the blocked
// code, names the webhook and what was left, keeps the release uninstalling, and finishes the job
// once the webhook is fixed. A dry run reveals the block before anything is deleted, and a
// webhook whose backend is down is found by the preflight before the uninstall starts.
func TestS5WebhookBlocksUninstall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mode   testenv.Mode
		stop   bool
		detail string // what berth says about the webhook's answer
	}{
		{"server-down", testenv.Allow(), true, "could not be called; its backend is not reachable"},
		{"server-hangs", testenv.Hang(), false, "did not answer within its timeout; its backend is reachable"},
		{"server-denies", testenv.Deny("deployments are pinned"), false, "answered and denied the request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := testenv.New(t)
			chart := berthtest.WriteChart(t, "web", webChart)
			berthtest.MustBerth(t, env, "install", "web", chart, "--wait")

			wh := testenv.StartWebhook(t, tt.mode)
			cfg := env.RegisterValidatingWebhook(t, wh, testenv.WebhookOptions{
				Name: "pin.deployments.berth.dev", Rules: deploymentDeletes,
				FailurePolicy: admissionregistrationv1.Fail, TimeoutSeconds: 2,
			})
			if tt.stop {
				wh.Stop()
			}

			// A dry run finds the block and deletes nothing.
			stdout, stderr, err := berthtest.Berth(t, env, "uninstall", "web", "--dry-run")
			if cli.ExitCode(err) != cli.ExitBlocked {
				t.Fatalf("uninstall --dry-run: exit %d (%v), want %d\n%s%s", cli.ExitCode(err), err, cli.ExitBlocked, stdout, stderr)
			}
			if !strings.Contains(err.Error(), "pin.deployments.berth.dev") || !strings.Contains(stdout, "delete/Deployment.apps") {
				t.Errorf("dry run does not name the webhook and show the plan:\n%v\n%s", err, stdout)
			}
			assertNotDeleting(t, env, "web")

			// A webhook whose backend is down is found by the preflight: the uninstall stops
			// before deleting anything, naming it.
			if tt.stop {
				_, _, err := berthtest.Berth(t, env, "uninstall", "web")
				if cli.ExitCode(err) != cli.ExitBlocked || !strings.Contains(err.Error(), cfg.Name) {
					t.Fatalf("uninstall with the webhook down: exit %d (%v), want %d naming %s", cli.ExitCode(err), err, cli.ExitBlocked, cfg.Name)
				}
				if rel := berthtest.LastRecord(t, env, "web"); rel.Info.Status != "deployed" {
					t.Errorf("release is %s after the preflight stopped the uninstall, want deployed", rel.Info.Status)
				}
			}

			// Past the preflight, the real uninstall stops, names the webhook and what is left,
			// and says so in JSON.
			stdout, _, err = berthtest.Berth(t, env, "uninstall", "web", "-o", "json", "--timeout", "1m", "--skip-preflight")
			if cli.ExitCode(err) != cli.ExitBlocked {
				t.Fatalf("uninstall: exit %d (%v), want %d", cli.ExitCode(err), err, cli.ExitBlocked)
			}
			var report lifecycle.UninstallResult
			if err := json.Unmarshal([]byte(stdout), &report); err != nil {
				t.Fatalf("uninstall -o json: %v\n%s", err, stdout)
			}
			b := findBlocker(t, report.Blockers, "Deployment.apps/"+env.Namespace+"/web")
			if b.Kind != cluster.BlockedByWebhook || b.Webhook == nil {
				t.Fatalf("blocker %+v, want the webhook", b)
			}
			w := b.Webhook
			if w.Configuration != cfg.Name || w.Name != "pin.deployments.berth.dev" || w.Operation != "DELETE" ||
				w.FailurePolicy != "Fail" || w.TimeoutSeconds != 2 || !strings.Contains(w.Detail, tt.detail) {
				t.Errorf("webhook report %+v, want configuration %s, failurePolicy Fail, timeout 2, %q", w, cfg.Name, tt.detail)
			}
			if b.Next == "" {
				t.Error("no next step")
			}
			left := strings.Join(identityStrings(report.Left), " ")
			for _, want := range []string{"Deployment.apps/" + env.Namespace + "/web", "ReplicaSet.apps/" + env.Namespace + "/web-", "Pod/" + env.Namespace + "/web-"} {
				if !strings.Contains(left, want) {
					t.Errorf("objects left %s: missing %s", left, want)
				}
			}
			if rel := berthtest.LastRecord(t, env, "web"); rel.Info.Status != "uninstalling" {
				t.Errorf("release is %s, want uninstalling", rel.Info.Status)
			}

			// Fix the webhook: the next uninstall finishes, dependents included.
			if err := env.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(t.Context(), cfg.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			berthtest.MustBerth(t, env, "uninstall", "web")
			berthtest.AssertNotRecorded(t, env, "web")
			assertEmpty(t, env)
		})
	}
}

// An object with a finalizer nobody removes: uninstall names the finalizer and does not claim
// success; once the finalizer is removed, uninstall again completes.
func TestUninstallNamesForeignFinalizer(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "held", map[string]string{
		"templates/held.yaml": `
apiVersion: v1
kind: ConfigMap
metadata:
  name: held
  finalizers: [example.com/hold]
`,
	})
	berthtest.MustBerth(t, env, "install", "held", chart)
	stdout, _, err := berthtest.Berth(t, env, "uninstall", "held", "--timeout", "3s")
	if cli.ExitCode(err) != cli.ExitBlocked {
		t.Fatalf("uninstall: exit %d (%v), want %d", cli.ExitCode(err), err, cli.ExitBlocked)
	}
	if !strings.Contains(err.Error(), "example.com/hold") || strings.Contains(stdout, "uninstalled\n") {
		t.Errorf("uninstall does not name the finalizer, or claims success:\n%v\n%s", err, stdout)
	}
	if !strings.Contains(stdout, "ConfigMap/"+env.Namespace+"/held") {
		t.Errorf("output does not list the ConfigMap left behind:\n%s", stdout)
	}
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Patch(t.Context(), "held", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	berthtest.MustBerth(t, env, "uninstall", "held")
	berthtest.AssertNotRecorded(t, env, "held")
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "held")
}

func findBlocker(t *testing.T, blockers []cluster.Blocker, id string) cluster.Blocker {
	t.Helper()
	for _, b := range blockers {
		if b.Object.String() == id {
			return b
		}
	}
	t.Fatalf("no blocker for %s in %+v", id, blockers)
	return cluster.Blocker{}
}

func identityStrings[T interface{ String() string }](ids []T) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

// assertNotDeleting checks that the Deployment exists and nobody started deleting it.
func assertNotDeleting(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	d, err := env.Client.AppsV1().Deployments(env.Namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil || d.DeletionTimestamp != nil {
		t.Fatalf("Deployment %s after a dry run: %v, deletionTimestamp %v", name, err, d.GetDeletionTimestamp())
	}
}

// assertEmpty checks that no Deployment, ReplicaSet, Pod or ConfigMap of the release is left.
func assertEmpty(t *testing.T, env *testenv.Env) {
	t.Helper()
	ctx := t.Context()
	rs, err := env.Client.AppsV1().ReplicaSets(env.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Items) != 0 || len(pods.Items) != 0 {
		t.Errorf("%d ReplicaSets and %d Pods left", len(rs.Items), len(pods.Items))
	}
	berthtest.AssertNoObject(t, env, "apps/v1", "Deployment", "web")
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "settings")
}
