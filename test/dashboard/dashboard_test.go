package dashboard

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/dashboard"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// configChart is a chart of one ConfigMap whose data holds .Values.color, and one Secret whose
// password is .Values.password.
func configChart(t testing.TB, name string) string {
	return berthtest.WriteChart(t, name, map[string]string{
		"Chart.yaml":  fmt.Sprintf("apiVersion: v2\nname: %s\nversion: 0.1.0\nappVersion: \"2.4.1\"\n", name),
		"values.yaml": "color: blue\npassword: first-password-0001\n",
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  color: {{ .Values.color | quote }}
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-credentials
stringData:
  password: {{ .Values.password | quote }}
`,
	})
}

// listEntry is a row of berth list -o json.
type listEntry struct {
	Name, Namespace, Revision, Status, Chart string
	AppVersion                               string `json:"app_version"`
}

// TestReleaseListMatchesBerthList: the releases page shows, for the test's namespace, the rows
// berth list -A shows for it: name, revision, status, chart and app version.
func TestReleaseListMatchesBerthList(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := configChart(t, "listed")
	berthtest.MustBerth(t, env, "install", "alpha", chart)
	berthtest.MustBerth(t, env, "install", "bravo", chart)
	berthtest.MustBerth(t, env, "upgrade", "bravo", chart, "--set", "color=green")
	failing := berthtest.WriteChart(t, "failing", map[string]string{"templates/check.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: check
  annotations: {helm.sh/hook: post-install}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations: {devcluster.berth.dev/outcome: fail}
    spec:
      restartPolicy: Never
      containers: [{name: check, image: example.invalid/check}]
`})
	if _, _, err := berthtest.Berth(t, env, "install", "charlie", failing); err == nil {
		t.Fatal("install whose post-install hook fails succeeded")
	}

	out, _ := berthtest.MustBerth(t, env, "list", "-A", "-o", "json")
	var all []listEntry
	if err := json.Unmarshal([]byte(out), &all); err != nil {
		t.Fatal(err)
	}
	want := slices.DeleteFunc(all, func(e listEntry) bool { return e.Namespace != env.Namespace })
	if len(want) < 2 {
		t.Fatalf("berth list -A shows %d releases in %s: %v", len(want), env.Namespace, want)
	}

	base := serve(t, env, dashboard.Options{}, "")
	p := berthtest.Browser(t)
	p.Navigate(base + "/")
	p.Type("#namespace-filter", env.Namespace)
	p.WaitText("#page-info", fmt.Sprintf("of %d", len(want)))
	// The rows, read at once: the page draws them anew whenever the cluster changes.
	var rows map[string][]string
	p.Eval(`Object.fromEntries(Array.from(document.querySelectorAll("#release-table tbody tr")).map((tr) =>
		[tr.dataset.release, [".name", ".revision", ".status", ".chart", ".app-version"].map((c) => tr.querySelector(c).textContent.trim())]))`, &rows)
	for _, e := range want {
		got := rows[e.Namespace+"/"+e.Name]
		wantRow := []string{e.Name, e.Revision, e.Status, e.Chart, e.AppVersion}
		for i := range wantRow {
			if len(got) != len(wantRow) || !strings.Contains(got[i], wantRow[i]) {
				t.Errorf("release %s: the page shows %q, berth list -A shows %q", e.Name, got, wantRow)
				break
			}
		}
	}
	p.WaitText(`#release-table tr[data-release="`+env.Namespace+`/alpha"] td.health`, "Ready")
	p.Screenshot("releases")
	if errs := p.JSErrors(); len(errs) > 0 {
		t.Errorf("the page raised errors: %v", errs)
	}
}

// TestRevisionDiffShowsChangedField: the diff between two revisions shows the field the upgrade
// changed, the values that changed, and a Secret's value masked.
func TestRevisionDiffShowsChangedField(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := configChart(t, "diffed")
	berthtest.MustBerth(t, env, "install", "web", chart)
	berthtest.MustBerth(t, env, "upgrade", "web", chart, "--set", "color=green", "--set", "password=second-password-0002")

	base := serve(t, env, dashboard.Options{}, "")
	p := berthtest.Browser(t)
	p.Navigate(releasePage(base, env.Namespace, "web"))
	p.WaitText("#release-revision", "2")
	p.Click("#tab-history")
	p.WaitText("#history", "values changed")
	p.Screenshot("history")
	p.Click("#tab-diff")
	cm := fmt.Sprintf(`#diff-output [data-file="ConfigMap/%s/web-config"]`, env.Namespace)
	p.WaitText(cm, `+  color: green`)
	p.WaitText(cm, `-  color: blue`)
	secret := fmt.Sprintf(`#diff-output [data-file="Secret/%s/web-credentials"]`, env.Namespace)
	p.WaitText(secret, "(masked, changed)")
	p.Screenshot("diff")
	if text := p.Text("#diff-output"); strings.Contains(text, "second-password-0002") || strings.Contains(text, "first-password-0001") {
		t.Errorf("the diff shows a Secret's value:\n%s", text)
	}
	p.Eval(`(() => { const s = document.querySelector("#diff-what"); s.value = "values"; s.dispatchEvent(new Event("change")); return true })()`, nil)
	p.WaitText(`#diff-output [data-file="values"]`, "+color: green")

	// With --reveal-secrets, the Secret's value shows.
	revealed := serve(t, env, dashboard.Options{RevealSecrets: true}, "")
	p.Navigate(releasePage(revealed, env.Namespace, "web"))
	p.WaitText("#release-revision", "2")
	p.Click("#tab-diff")
	p.WaitText(secret, "second-password-0002")
}

// TestBlockedUninstallNamesWebhook: the plan of an uninstall that an admission webhook would
// refuse names the webhook, before anything is deleted.
func TestBlockedUninstallNamesWebhook(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	berthtest.MustBerth(t, env, "install", "guarded", configChart(t, "guarded"))
	w := testenv.StartWebhook(t, testenv.Deny("configmaps here are protected"))
	env.RegisterValidatingWebhook(t, w, testenv.WebhookOptions{
		Name:  "protect.dashboard.berth.dev",
		Rules: []admissionregistrationv1.RuleWithOperations{testenv.Rule([]admissionregistrationv1.OperationType{admissionregistrationv1.Delete}, []string{""}, []string{"v1"}, []string{"configmaps"})},
	})

	base := serve(t, env, dashboard.Options{AllowActions: true}, "")
	p := berthtest.Browser(t)
	p.Navigate(releasePage(base, env.Namespace, "guarded"))
	p.Click("#action-uninstall")
	p.WaitText("#confirm-blockers", "protect.dashboard.berth.dev")
	p.WaitText("#confirm-blockers", "webhook")
	p.Screenshot("blocked-uninstall")
	p.Click("#confirm-cancel")
	if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "guarded-config", metav1.GetOptions{}); err != nil {
		t.Fatalf("the plan of the uninstall changed the cluster: %v", err)
	}
	berthtest.LastRecord(t, env, "guarded") // still recorded
}

// TestPageFollowsDeploymentReadiness: a Deployment that becomes ready shows ready on the page
// that was open before, without a reload.
func TestPageFollowsDeploymentReadiness(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "slow", map[string]string{"templates/deploy.yaml": berthtest.StartingDeployment("slow", "8s")})
	berthtest.MustBerth(t, env, "install", "slow", chart, "--wait=false")

	base := serve(t, env, dashboard.Options{}, "")
	p := berthtest.Browser(t)
	p.Navigate(releasePage(base, env.Namespace, "slow"))
	row := fmt.Sprintf(`#objects tr[data-object="Deployment.apps/%s/slow"] .state`, env.Namespace)
	p.WaitText(row, "InProgress")
	p.WaitText("#live", "live")
	p.Eval(`window.berthNotReloaded = true`, nil)
	p.Screenshot("objects-in-progress")
	p.WaitText(row, "Ready")
	var same bool
	p.Eval(`window.berthNotReloaded === true`, &same)
	if !same {
		t.Error("the page was reloaded to show the Deployment ready")
	}
	p.Screenshot("objects")
}

// TestActionsNeedConfirmationAndHonourRBAC: a rollback runs only once its plan is confirmed;
// a user who may not delete sees the API server's refusal.
func TestActionsNeedConfirmationAndHonourRBAC(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := configChart(t, "acted")
	berthtest.MustBerth(t, env, "install", "app", chart)
	berthtest.MustBerth(t, env, "upgrade", "app", chart, "--set", "color=green")

	base := serve(t, env, dashboard.Options{AllowActions: true}, "")
	p := berthtest.Browser(t)
	p.Navigate(releasePage(base, env.Namespace, "app"))
	p.Click("#action-rollback")
	p.WaitText("#confirm-plan", "color")
	p.Screenshot("rollback-plan")
	if rel := berthtest.LastRecord(t, env, "app"); rel.Version != 2 {
		t.Fatalf("before the confirmation the release is at revision %d, want 2", rel.Version)
	}
	p.Click("#confirm-button")
	p.WaitText("#action-done", "revision 3")
	p.WaitText("#release-revision", "3")
	if rel := berthtest.LastRecord(t, env, "app"); rel.Version != 3 || rel.Config["color"] != nil {
		t.Fatalf("after the rollback the release is at revision %d with values %v, want 3 with those of revision 1", rel.Version, rel.Config)
	}

	// A viewer may read but not delete: its uninstall is refused by the API server, and shown.
	viewer := grantViewer(t, env)
	vbase := serve(t, env, dashboard.Options{AllowActions: true}, viewer)
	v := berthtest.Browser(t)
	v.Navigate(releasePage(vbase, env.Namespace, "app"))
	v.WaitText("#release-revision", "3")
	v.Click("#action-uninstall")
	v.WaitText("#confirm-blockers", "forbidden")
	v.Screenshot("uninstall-forbidden")
	berthtest.LastRecord(t, env, "app")
}

// grantViewer makes a ServiceAccount that may read everything in the test's namespace and change
// nothing, and returns the user name to impersonate it.
func grantViewer(t testing.TB, env *testenv.Env) string {
	t.Helper()
	ctx := t.Context()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "viewer"}}
	if _, err := env.Client.CoreV1().ServiceAccounts(env.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "viewer"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"},
	}}}
	if _, err := env.Client.RbacV1().Roles(env.Namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	user := "system:serviceaccount:" + env.Namespace + ":viewer"
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "viewer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "viewer"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "viewer", Namespace: env.Namespace}}}
	if _, err := env.Client.RbacV1().RoleBindings(env.Namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return user
}

// TestHooksShowOutcomeAndLogs: the hooks of a release show how their last run ended, and the
// tail of the logs of a hook whose Pod is still there.
func TestHooksShowOutcomeAndLogs(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "hooked", map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hooked\n",
		"templates/seed.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: seed
  annotations:
    helm.sh/hook: post-install
    helm.sh/hook-delete-policy: before-hook-creation
spec:
  template:
    metadata:
      annotations:
        devcluster.berth.dev/outcome: succeed
        devcluster.berth.dev/log: "seeded 42 rows"
    spec:
      restartPolicy: Never
      containers: [{name: seed, image: example.invalid/seed}]
`,
	})
	berthtest.MustBerth(t, env, "install", "hooked", chart)

	base := serve(t, env, dashboard.Options{}, "")
	p := berthtest.Browser(t)
	p.Navigate(releasePage(base, env.Namespace, "hooked"))
	p.Click("#tab-hooks")
	p.WaitText(`#hooks tr[data-hook="seed"] .phase`, "Succeeded")
	p.WaitText(`#hooks tr[data-hook="seed"]`, "seeded 42 rows")
	p.Screenshot("hooks")
	p.Click("#tab-doctor")
	p.WaitText("#tab-body", "berth doctor")
	p.Screenshot("doctor")
}
