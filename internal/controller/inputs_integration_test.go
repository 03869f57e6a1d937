package controller_test

import (
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// settingsChart is a chart with a ConfigMap web-config of its replicas and password values.
func settingsChart(t *testing.T) string {
	return berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"values.yaml": "replicas: 1\npassword: none\n",
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {replicas: "{{ .Values.replicas }}", password: "{{ .Values.password }}"}
`,
	})
}

func createConfigMap(t *testing.T, env *testenv.Env, name string, data map[string]string, binary map[string][]byte) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data, BinaryData: binary}
	if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createSecret(t *testing.T, env *testenv.Env, name string, data map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
	if _, err := env.Client.CoreV1().Secrets(env.Namespace).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// assertConfig checks a key of the ConfigMap web-config the charts make.
func assertConfig(t *testing.T, env *testenv.Env, key, want string) {
	t.Helper()
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "web-config", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ConfigMap web-config: %v", err)
	}
	if cm.Data[key] != want {
		t.Errorf("ConfigMap web-config %s = %q, want %q", key, cm.Data[key], want)
	}
}

// notReadyWith says the Release is Ready=False with reason for its generation.
func notReadyWith(reason string) func(*v1alpha1.Release) bool {
	return func(rel *v1alpha1.Release) bool {
		c := condition(rel, controller.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason && rel.Status.ObservedGeneration == rel.Generation
	}
}

func TestReleaseValuesFromConfigMapAndSecret(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	createConfigMap(t, env, "web-values", map[string]string{"values.yaml": "replicas: 4\npassword: from-configmap\n"}, nil)
	createSecret(t, env, "web-secret", map[string][]byte{"password": []byte("s3cret")})
	rel := smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, settingsChart(t)), "deployer")
	rel.Spec.Values = nil
	rel.Spec.ValuesFrom = []v1alpha1.ValuesReference{
		{Kind: "ConfigMap", Name: "web-values"},
		{Kind: "Secret", Name: "web-secret", Key: "password", TargetPath: "password"},
	}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))
	assertConfig(t, env, "replicas", "4")
	assertConfig(t, env, "password", "s3cret")
	digest := got.Status.ValuesDigest

	// A new content of the ConfigMap is a new release of the values.
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "web-values", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["values.yaml"] = "replicas: 6\n"
	if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, env.Namespace, "web", "is upgraded with the ConfigMap's new values", readyAt(2))
	if got.Status.ValuesDigest == digest {
		t.Errorf("values digest %s did not change with the values", digest)
	}
	if h := got.Status.History; len(h) != 2 || h[0].Operation != "upgrade" || h[0].Outcome != "Succeeded" {
		t.Errorf("history: %+v, want an upgrade after the install", h)
	}
	assertConfig(t, env, "replicas", "6")
	assertConfig(t, env, "password", "s3cret")
	if record := berthtest.LastRecord(t, env, "web"); record.Version != 2 || record.Info.Status != release.StatusDeployed {
		t.Errorf("record: revision %d %s, want 2 deployed", record.Version, record.Info.Status)
	}

	// So is a new content of the Secret.
	patch := []byte(`{"stringData":{"password":"rotated"}}`)
	if _, err := env.Client.CoreV1().Secrets(env.Namespace).Patch(t.Context(), "web-secret", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, env.Namespace, "web", "is upgraded with the Secret's new value", readyAt(3))
	assertConfig(t, env, "password", "rotated")
	deleteRelease(t, c, got)
}

func TestReleaseWaitsForMissingValues(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	rel := smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, settingsChart(t)), "deployer")
	rel.Spec.ValuesFrom = []v1alpha1.ValuesReference{
		{Kind: "Secret", Name: "web-overrides", Optional: true},
		{Kind: "ConfigMap", Name: "web-values", Key: "prod.yaml"},
	}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "waits for its values", notReadyWith(controller.ReasonValuesMissing))
	ready := condition(got, controller.ConditionReady)
	if !strings.Contains(ready.Message, "ConfigMap/"+env.Namespace+"/web-values") || !strings.Contains(ready.Message, "prod.yaml") {
		t.Errorf("Ready message %q, want it to name ConfigMap/%s/web-values and its key prod.yaml", ready.Message, env.Namespace)
	}
	if s := condition(got, controller.ConditionStalled); s != nil {
		t.Errorf("Stalled %+v while waiting for values that may come", s)
	}
	berthtest.AssertNoRecords(t, env)

	// The ConfigMap appears: the release is installed with its values; the optional Secret is
	// still missing, and counts as no values.
	createConfigMap(t, env, "web-values", map[string]string{"prod.yaml": "password: prod\n"}, nil)
	got = waitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))
	assertConfig(t, env, "replicas", "2")
	assertConfig(t, env, "password", "prod")
	deleteRelease(t, c, got)
}

func TestReleaseValuesAreReadAsTheServiceAccount(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	if _, err := env.Client.CoreV1().ServiceAccounts(env.Namespace).Create(t.Context(), serviceAccount("nobody"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createConfigMap(t, env, "web-values", map[string]string{"values.yaml": "replicas: 4\n"}, nil)
	rel := smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, settingsChart(t)), "nobody")
	rel.Spec.ValuesFrom = []v1alpha1.ValuesReference{{Kind: "ConfigMap", Name: "web-values"}}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "is denied its values", notReadyWith(controller.ReasonPermissionDenied))
	if len(got.Status.Blockers) != 1 || got.Status.Blockers[0].Kind != "permission" || !strings.Contains(got.Status.Blockers[0].Message, "configmaps") {
		t.Errorf("blockers: %+v, want the permission to read configmaps", got.Status.Blockers)
	}
	berthtest.AssertNoRecords(t, env)
}

func TestReleaseChartFromSecretAndConfigMap(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	web, err := os.ReadFile(settingsChart(t))
	if err != nil {
		t.Fatal(err)
	}
	api, err := os.ReadFile(berthtest.PackageNewChart(t, "api", "1.2.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: api-config}\ndata: {replicas: \"{{ .Values.replicas }}\"}\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	createSecret(t, env, "charts", map[string][]byte{"web.tgz": web, "broken.tgz": []byte("not a chart")})
	createConfigMap(t, env, "charts", nil, map[string][]byte{"api.tgz": api})

	releases := map[string]v1alpha1.ChartSource{
		"web":    {SecretRef: &v1alpha1.KeyReference{Name: "charts", Key: "web.tgz"}},
		"api":    {ConfigMapRef: &v1alpha1.KeyReference{Name: "charts", Key: "api.tgz"}},
		"broken": {SecretRef: &v1alpha1.KeyReference{Name: "charts", Key: "broken.tgz"}},
		"absent": {ConfigMapRef: &v1alpha1.KeyReference{Name: "charts", Key: "absent.tgz"}},
	}
	for name, source := range releases {
		rel := smallestRelease(t, env.Namespace, "https://charts.example.test", "deployer")
		rel.Name, rel.Spec.Chart = name, source
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}
	got := waitFor(t, c, env.Namespace, "web", "is installed from the Secret", readyAt(1))
	if got.Status.ChartName != "web" || got.Status.ChartVersion != "0.3.0" || !strings.HasPrefix(got.Status.ChartDigest, "sha256:") {
		t.Errorf("status: chart %s %s digest %q", got.Status.ChartName, got.Status.ChartVersion, got.Status.ChartDigest)
	}
	assertConfig(t, env, "replicas", "2")
	apiRel := waitFor(t, c, env.Namespace, "api", "is installed from the ConfigMap", readyAt(1))
	if apiRel.Status.ChartName != "api" || apiRel.Status.ChartVersion != "1.2.0" {
		t.Errorf("status: chart %s %s", apiRel.Status.ChartName, apiRel.Status.ChartVersion)
	}
	if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "api-config", metav1.GetOptions{}); err != nil {
		t.Errorf("ConfigMap api-config: %v", err)
	}
	broken := waitFor(t, c, env.Namespace, "broken", "is refused", notReadyWith(controller.ReasonInvalidChart))
	if m := condition(broken, controller.ConditionReady).Message; !strings.Contains(m, "broken.tgz") {
		t.Errorf("Ready message %q, want it to name the key broken.tgz", m)
	}
	absent := waitFor(t, c, env.Namespace, "absent", "waits for its chart", notReadyWith(controller.ReasonChartMissing))
	if m := condition(absent, controller.ConditionReady).Message; !strings.Contains(m, "ConfigMap/"+env.Namespace+"/charts") || !strings.Contains(m, "absent.tgz") {
		t.Errorf("Ready message %q, want it to name ConfigMap/%s/charts and the key absent.tgz", m, env.Namespace)
	}
	for _, rel := range []*v1alpha1.Release{got, apiRel, broken, absent} {
		deleteRelease(t, c, rel)
	}
}

func TestReleaseRetriesAFailedInstall(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	chart := berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {replicas: \"{{ .Values.replicas }}\"}\n",
		"templates/migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: web-migrate
  annotations: {helm.sh/hook: "pre-install,pre-upgrade"}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations: {devcluster.berth.dev/outcome: fail}
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: example.invalid/migrate}]
`,
	})
	rel := smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, chart), "deployer")
	rel.Spec.Install = &v1alpha1.InstallSpec{OperationSpec: v1alpha1.OperationSpec{Retries: 2, RetryBackoff: &metav1.Duration{Duration: time.Second}}}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "has spent its retries", func(rel *v1alpha1.Release) bool {
		s := condition(rel, controller.ConditionStalled)
		return s != nil && s.Status == metav1.ConditionTrue
	})
	if s := condition(got, controller.ConditionStalled); s.Reason != controller.ReasonRetriesExhausted || !strings.Contains(s.Message, "install.retries: 2") {
		t.Errorf("Stalled %s: %s, want %s naming install.retries", s.Reason, s.Message, controller.ReasonRetriesExhausted)
	}
	if r := condition(got, controller.ConditionReady); r == nil || r.Status != metav1.ConditionFalse || r.Reason != controller.ReasonHookFailed {
		t.Errorf("Ready condition: %+v, want False with reason %s", r, controller.ReasonHookFailed)
	}
	if got.Status.Failures != 3 {
		t.Errorf("status.failures = %d, want 3", got.Status.Failures)
	}
	if h := got.Status.History; len(h) != 3 || h[0].Outcome != "Failed" || h[1].Outcome != "Failed" || h[2].Outcome != "Failed" || h[2].Operation != "install" {
		t.Errorf("history: %+v, want an install and two retries, all failed", h)
	}
	if len(got.Status.Blockers) != 1 || got.Status.Blockers[0].Kind != "hook" {
		t.Errorf("blockers: %+v, want the hook", got.Status.Blockers)
	}
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-config")

	// A change of the values is a new attempt, with its own retries.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"values":{"replicas":3}}}`))
	if err := c.Patch(t.Context(), got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, env.Namespace, "web", "has tried the new values", func(rel *v1alpha1.Release) bool {
		return rel.Status.LastAttemptedGeneration == rel.Generation && len(rel.Status.History) > 3 && rel.Status.Failures >= 1
	})
	if got.Status.Failures > 3 {
		t.Errorf("status.failures = %d after a change of the values, want a new count", got.Status.Failures)
	}
	deleteRelease(t, c, got)
}

// TestReleaseWaitsForItsKubeConfig: a Release whose spec.kubeConfig names a Secret that is not
// there, then one without the key, says so with KubeConfigMissing, naming the Secret and the key.
// The kubeconfig is read as the namespace's default account, here allowed to read Secrets.
func TestReleaseWaitsForItsKubeConfig(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	rbac := env.Client.RbacV1()
	read := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-secrets"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}
	if _, err := rbac.Roles(env.Namespace).Create(t.Context(), read, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bind := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read-secrets"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-secrets"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: env.Namespace}}}
	if _, err := rbac.RoleBindings(env.Namespace).Create(t.Context(), bind, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rel := smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, settingsChart(t)), "deployer")
	rel.Spec.KubeConfig = &v1alpha1.KubeConfigReference{SecretRef: v1alpha1.KubeConfigSecretReference{Name: "workload"}}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "waits for its kubeconfig", notReadyWith(controller.ReasonKubeConfigMissing))
	want := "Secret/" + env.Namespace + "/workload not found (key value wanted): put the cluster's kubeconfig there, or fix spec.kubeConfig.secretRef"
	if msg := condition(got, controller.ConditionReady).Message; !strings.Contains(msg, want) {
		t.Errorf("Ready message %q, want it to say %q", msg, want)
	}

	createSecret(t, env, "workload", map[string][]byte{"other": []byte("x")})
	want = "Secret/" + env.Namespace + "/workload has no key value: put the cluster's kubeconfig there"
	waitFor(t, c, env.Namespace, "web", "names the missing key", func(r *v1alpha1.Release) bool {
		ready := condition(r, controller.ConditionReady)
		return ready != nil && ready.Reason == controller.ReasonKubeConfigMissing && strings.Contains(ready.Message, want)
	})
	berthtest.AssertNoRecords(t, env)
}
