package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/internal/doctor"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// runDoctor runs berth doctor -o json with args against the test's cluster and returns the report
// and the exit code.
func runDoctor(t *testing.T, env *testenv.Env, args ...string) (doctor.Report, int) {
	t.Helper()
	stdout, stderr, err := berthtest.RunBerth(t, append([]string{"doctor", "-o", "json", "--kubeconfig", env.Kubeconfig}, args...)...)
	var rep doctor.Report
	if jerr := json.Unmarshal([]byte(stdout), &rep); jerr != nil {
		t.Fatalf("berth doctor printed no report (%v): %v\n%s\n%s", err, jerr, stdout, stderr)
	}
	return rep, cli.ExitCode(err)
}

// find returns the findings of check about objects named name.
func find(rep doctor.Report, check, name string) []doctor.Finding {
	var out []doctor.Finding
	for _, f := range rep.Findings {
		if f.Check == check && f.Object.Name == name {
			out = append(out, f)
		}
	}
	return out
}

// eventually waits, within a minute, until cond holds.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, cond); err != nil {
		t.Fatalf("waiting until %s: %v", what, err)
	}
}

// noFinalizers is a merge patch that clears an object's finalizers.
var noFinalizers = []byte(`{"metadata":{"finalizers":null}}`)

// TestCleanNamespace: a namespace holding ordinary objects has nothing to report, exit 0.
func TestCleanNamespace(t *testing.T) {
	env := testenv.New(t)
	env.Apply(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: settings}, data: {a: b}}`)
	rep, code := runDoctor(t, env, "-n", env.Namespace)
	if len(rep.Findings) != 0 || code != 0 {
		t.Errorf("doctor of a clean namespace: exit %d, findings %+v", code, rep.Findings)
	}
	if rep.Scope != "namespace "+env.Namespace {
		t.Errorf("scope %q", rep.Scope)
	}
}

// TestAPIServiceWithoutBackend: an APIService whose service does not exist is not Available and
// is a blocker. (Cluster-wide, so not in parallel with the other tests.)
func TestAPIServiceWithoutBackend(t *testing.T) {
	env := testenv.New(t)
	group := strings.ReplaceAll(env.Namespace, "-", "") + ".example.com"
	name := "v1alpha1." + group
	env.Apply(t, deadAPIService(group, env.Namespace))
	awaitAPIServiceVerdict(t, env, name)
	rep, code := runDoctor(t, env)
	got := find(rep, "apiservice", name)
	if len(got) != 1 || got[0].Severity != doctor.Blocker || !strings.Contains(got[0].Breaks, group+"/v1alpha1") {
		t.Fatalf("findings about APIService %s: %+v", name, got)
	}
	if code != cli.ExitDoctorBlockers {
		t.Errorf("exit code %d, want %d", code, cli.ExitDoctorBlockers)
	}
}

// TestWebhookWithoutEndpoints: a webhook with failurePolicy Fail whose service has no endpoints
// blocks every DELETE of Pods in the namespace, and doctor says so plainly.
func TestWebhookWithoutEndpoints(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	name := "guard-" + env.Namespace
	env.Apply(t, fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: %s}
webhooks:
- name: pods.guard.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 5
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %s}}
  rules: [{operations: [DELETE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  clientConfig: {service: {namespace: %s, name: nobody-home}}
`, name, env.Namespace, env.Namespace))
	t.Cleanup(func() {
		_ = env.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	rep, code := runDoctor(t, env, "-n", env.Namespace)
	got := find(rep, "webhook", name)
	if len(got) != 1 || got[0].Severity != doctor.Blocker || !strings.Contains(got[0].Breaks, "every DELETE of pods in namespaces labelled kubernetes.io/metadata.name="+env.Namespace+" fails") ||
		!strings.Contains(got[0].Problem, "nobody-home") {
		t.Fatalf("findings about webhook configuration %s: %+v", name, got)
	}
	if code != cli.ExitDoctorBlockers {
		t.Errorf("exit code %d, want %d", code, cli.ExitDoctorBlockers)
	}
}

// TestNamespaceKeptTerminating: a namespace whose ConfigMap waits on a finalizer no controller
// removes stays Terminating; doctor names the namespace and the finalizer.
func TestNamespaceKeptTerminating(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	ns := "term-" + env.Namespace
	if len(ns) > 63 {
		ns = ns[:63]
	}
	if _, err := env.Client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = env.Client.CoreV1().ConfigMaps(ns).Patch(context.Background(), "held", types.MergePatchType, noFinalizers, metav1.PatchOptions{})
	})
	if err := env.Client.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ConfigMap is being deleted", func(ctx context.Context) (bool, error) {
		cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(ctx, "held", metav1.GetOptions{})
		return err == nil && cm.DeletionTimestamp != nil, nil
	})
	rep, code := runDoctor(t, env, "-n", ns)
	if got := find(rep, "namespace", ns); len(got) != 1 || got[0].Severity != doctor.Blocker || !strings.Contains(got[0].Problem, "Terminating") {
		t.Errorf("findings about namespace %s: %+v", ns, got)
	}
	held := find(rep, "finalizer", "held")
	if len(held) != 1 || !strings.Contains(held[0].Problem, "example.com/hold") || !strings.Contains(held[0].Fix, "example.com") {
		t.Errorf("findings about ConfigMap held: %+v", held)
	}
	if code != cli.ExitDoctorBlockers {
		t.Errorf("exit code %d, want %d", code, cli.ExitDoctorBlockers)
	}
}

// TestArgoHookFinalizerOnCompletedJob: Argo CD's hook finalizer on a Job that completed will
// hang its deletion.
func TestArgoHookFinalizerOnCompletedJob(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	env.Apply(t, `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  finalizers: [argocd.argoproj.io/hook-finalizer]
spec:
  backoffLimit: 0
  template:
    metadata: {annotations: {devcluster.berth.dev/run: 0s}}
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: example.invalid/migrate}]
`)
	t.Cleanup(func() {
		_, _ = env.Client.BatchV1().Jobs(env.Namespace).Patch(context.Background(), "migrate", types.MergePatchType, noFinalizers, metav1.PatchOptions{})
	})
	eventually(t, "the Job completed", func(ctx context.Context) (bool, error) {
		j, err := env.Client.BatchV1().Jobs(env.Namespace).Get(ctx, "migrate", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range j.Status.Conditions {
			if c.Type == "Complete" && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	rep, code := runDoctor(t, env, "-n", env.Namespace)
	got := find(rep, "finalizer", "migrate")
	if len(got) != 1 || got[0].Object.Kind != "Job" || !strings.Contains(got[0].Problem, "argocd.argoproj.io/hook-finalizer") {
		t.Fatalf("findings about Job migrate: %+v", rep.Findings)
	}
	if code != cli.ExitDoctorWarnings {
		t.Errorf("exit code %d, want %d (warnings only)", code, cli.ExitDoctorWarnings)
	}
}

// TestPendingReleaseWithoutLease: a release Helm left pending-upgrade, with no operation holding
// it, is a blocker whose fix is berth recover.
func TestPendingReleaseWithoutLease(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	now := time.Now()
	store := release.NewSecretStore(env.Client.CoreV1(), env.Namespace)
	for v, status := range []release.Status{release.StatusDeployed, release.StatusPendingUpgrade} {
		rel := &release.Release{
			Name: "web", Namespace: env.Namespace, Version: v + 1,
			Chart: &chartv2.Chart{Metadata: &chartv2.Metadata{APIVersion: "v2", Name: "web", Version: "1.0.0"}},
			Info:  &release.Info{FirstDeployed: now, LastDeployed: now, Status: status},
		}
		if err := store.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}
	rep, code := runDoctor(t, env, "-n", env.Namespace, "--release", "web")
	got := find(rep, "release", "web")
	if len(got) != 1 || got[0].Severity != doctor.Blocker || got[0].Fix != fmt.Sprintf("berth recover web -n %s (finishes it; --rollback undoes it)", env.Namespace) {
		t.Fatalf("findings about release web: %+v", rep.Findings)
	}
	if code != cli.ExitDoctorBlockers {
		t.Errorf("exit code %d, want %d", code, cli.ExitDoctorBlockers)
	}
	// Once recovered, nothing is left to find.
	berthtest.MustBerth(t, env, "recover", "web", "--rollback")
	if rep, _ := runDoctor(t, env, "-n", env.Namespace, "--release", "web"); len(find(rep, "release", "web")) != 0 {
		t.Errorf("release web still reported after berth recover: %+v", rep.Findings)
	}
}

// TestZeroDisruptionBudget: a budget that allows no eviction of its Pods is a warning.
func TestZeroDisruptionBudget(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	env.ApplyAll(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: example.invalid/web}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
`)
	eventually(t, "the budget counts its Pod", func(ctx context.Context) (bool, error) {
		p, err := env.Client.PolicyV1().PodDisruptionBudgets(env.Namespace).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && p.Status.ExpectedPods == 1 && p.Status.CurrentHealthy == 1, nil
	})
	rep, code := runDoctor(t, env, "-n", env.Namespace)
	got := find(rep, "pdb", "web")
	if len(got) != 1 || got[0].Severity != doctor.Warning || !strings.Contains(got[0].Problem, "0 disruptions") {
		t.Fatalf("findings about PodDisruptionBudget web: %+v", rep.Findings)
	}
	if code != cli.ExitDoctorWarnings {
		t.Errorf("exit code %d, want %d", code, cli.ExitDoctorWarnings)
	}
}

// TestMissingPermissionsAreFindings: a user who may read only one namespace gets findings that
// name what it may not list, not a crash.
func TestMissingPermissionsAreFindings(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	ctx := t.Context()
	if _, err := env.Client.CoreV1().ServiceAccounts(env.Namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.ApplyAll(t, fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader}
rules: [{apiGroups: ["*"], resources: ["*"], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader}
subjects: [{kind: ServiceAccount, name: reader, namespace: %s}]
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
`, env.Namespace))
	token, err := env.Client.CoreV1().ServiceAccounts(env.Namespace).CreateToken(ctx, "reader", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := berthtest.RunBerth(t, "doctor", "-o", "json", "--kubeconfig", empty, "--kube-apiserver", env.Config.Host,
		"--kube-ca-file", env.Config.CAFile, "--kube-token", token.Status.Token)
	var rep doctor.Report
	if jerr := json.Unmarshal([]byte(stdout), &rep); jerr != nil {
		t.Fatalf("berth doctor as a namespace reader printed no report (%v): %v\n%s%s", err, jerr, stdout, stderr)
	}
	if got := find(rep, "permission", ""); len(got) == 0 {
		t.Fatalf("no permission findings for a namespace reader: %+v", rep.Findings)
	}
	named := false
	for _, f := range rep.Findings {
		if f.Check == "permission" && strings.Contains(f.Problem, "cannot list validatingwebhookconfigurations") {
			named = true
		}
	}
	if !named {
		t.Errorf("no finding says the reader cannot list validatingwebhookconfigurations: %+v", rep.Findings)
	}
	if code := cli.ExitCode(err); code == 0 {
		t.Errorf("exit code 0 with permission findings")
	}
}

// TestPreflightStopsAnOperationABlockerWouldHang: with a webhook that cannot answer intercepting
// DELETE of ConfigMaps in the namespace, uninstall, which deletes the release's ConfigMap, stops
// before deleting anything and names it; an upgrade of the same chart, which deletes nothing, is
// not stopped by it.
func TestPreflightStopsAnOperationABlockerWouldHang(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "settings", map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: settings\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n",
	})
	berthtest.MustBerth(t, env, "install", "settings", chart)

	name := "cm-guard-" + env.Namespace
	env.Apply(t, fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: %s}
webhooks:
- name: configmaps.guard.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %s}}
  rules: [{operations: [DELETE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  clientConfig: {service: {namespace: %s, name: nobody-home}}
`, name, env.Namespace, env.Namespace))
	t.Cleanup(func() {
		_ = env.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})

	_, _, err := berthtest.Berth(t, env, "uninstall", "settings")
	if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("uninstall with a dead DELETE webhook: error %v, want the preflight to name %s", err, name)
	}
	if code := cli.ExitCode(err); code != cli.ExitBlocked {
		t.Errorf("exit code %d, want %d", code, cli.ExitBlocked)
	}
	if rel := berthtest.LastRecord(t, env, "settings"); rel.Info.Status != release.StatusDeployed {
		t.Errorf("release is %s after the preflight stopped the uninstall, want deployed", rel.Info.Status)
	}
	if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "settings", metav1.GetOptions{}); err != nil {
		t.Errorf("the release's ConfigMap after the preflight stopped the uninstall: %v", err)
	}

	// An upgrade of the same chart deletes nothing, so the API server never calls the webhook
	// for it: the preflight lets it go on, and it succeeds.
	berthtest.MustBerth(t, env, "upgrade", "settings", chart)
	if rel := berthtest.LastRecord(t, env, "settings"); rel.Version != 2 || rel.Info.Status != release.StatusDeployed {
		t.Errorf("after an upgrade that deletes nothing: revision %d %s, want 2 deployed", rel.Version, rel.Info.Status)
	}
}

// TestLeftoverHook: a hook Job that completed and whose delete policy says it should then have
// been deleted was left by an operation that stopped; doctor names it.
func TestLeftoverHook(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	env.Apply(t, `apiVersion: batch/v1
kind: Job
metadata:
  name: web-migrate
  annotations: {helm.sh/hook: pre-upgrade, helm.sh/hook-delete-policy: hook-succeeded}
spec:
  backoffLimit: 0
  template:
    metadata: {annotations: {devcluster.berth.dev/run: 0s}}
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: example.invalid/migrate}]
`)
	eventually(t, "the Job completed", func(ctx context.Context) (bool, error) {
		j, err := env.Client.BatchV1().Jobs(env.Namespace).Get(ctx, "web-migrate", metav1.GetOptions{})
		return err == nil && j.Status.Succeeded > 0 && j.Status.CompletionTime != nil, nil
	})
	rep, code := runDoctor(t, env, "-n", env.Namespace)
	got := find(rep, "hook", "web-migrate")
	if len(got) != 1 || got[0].Severity != doctor.Warning || !strings.Contains(got[0].Problem, "hook-succeeded") {
		t.Fatalf("findings about hook Job web-migrate: %+v", rep.Findings)
	}
	if code != cli.ExitDoctorWarnings {
		t.Errorf("exit code %d, want %d", code, cli.ExitDoctorWarnings)
	}
}
