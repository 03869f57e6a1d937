package controller_test

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// kubeconfigSecret puts kubeconfig into the Secret name of the test's namespace, under the key
// Cluster API uses (value).
func kubeconfigSecret(t testing.TB, env *testenv.Env, name string, kubeconfig []byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"value": kubeconfig}}
	if _, err := env.Client.CoreV1().Secrets(env.Namespace).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// defaultReadsSecrets lets the default account of the test's namespace read its Secrets: the
// account that reads a remote Release's kubeconfig in the controller's cluster.
func defaultReadsSecrets(t testing.TB, env *testenv.Env) {
	t.Helper()
	ctx, rbac := t.Context(), env.Client.RbacV1()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-secrets"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}
	if _, err := rbac.Roles(env.Namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := rbac.RoleBindings(env.Namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "read-secrets"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "read-secrets"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: env.Namespace}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// remoteRelease is releaseOf whose release goes into the cluster of the kubeconfig in Secret
// secret, acting there as serviceAccount (the kubeconfig's identity when empty).
func remoteRelease(t *testing.T, ns, name, repoURL, serviceAccount, values, secret string) *v1alpha1.Release {
	rel := releaseOf(t, ns, name, repoURL, "web", serviceAccount, values)
	rel.Spec.KubeConfig = &v1alpha1.KubeConfigReference{SecretRef: v1alpha1.KubeConfigSecretReference{Name: secret}}
	return rel
}

// configValue is the key replicas of the web chart's ConfigMap in env's namespace.
func configValue(t testing.TB, env *testenv.Env) string {
	t.Helper()
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "web-config", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ConfigMap web-config in namespace %s: %v", env.Namespace, err)
	}
	return cm.Data["replicas"]
}

// TestReleaseIntoAnotherCluster installs, upgrades and uninstalls a release in a workload
// cluster through a kubeconfig Secret, as the workload cluster's ServiceAccount deployer: helm
// sees the release there, and nothing of it is in the controller's cluster.
func TestReleaseIntoAnotherCluster(t *testing.T) {
	env := testenv.New(t)
	workload := testenv.NewCluster(t)
	wenv := workload.New(t, env.Namespace)
	releasetest.Deployer(t, wenv, "deployer")
	c := releasetest.Client(t, env)
	defaultReadsSecrets(t, env)
	kubeconfigSecret(t, env, "workload-kubeconfig", workload.KubeconfigData(t))
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, webChart(t))
	ctl := newController(t, env)
	ctl.start()

	rel := remoteRelease(t, env.Namespace, "web", repo.URL, "deployer", "{replicas: 2}", "workload-kubeconfig")
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))
	if got := strings.TrimSpace(berthtest.MustHelm(t, wenv, "list", "-q")); got != "web" {
		t.Errorf("helm list in the workload cluster: %q, want web", got)
	}
	if got := configValue(t, wenv); got != "2" {
		t.Errorf("replicas %q in the workload cluster, want 2", got)
	}
	// Nothing of the release in the controller's cluster: no object, no record, no lease.
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-config")
	berthtest.AssertNoObject(t, env, "apps/v1", "Deployment", "web")
	berthtest.AssertNoObject(t, env, "coordination.k8s.io/v1", "Lease", "web")
	berthtest.AssertNoRecords(t, env)

	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"values":{"replicas":3}}}`))
	if err := c.Patch(t.Context(), rel, patch); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitFor(t, c, env.Namespace, "web", "is upgraded", readyAt(2))
	if got := configValue(t, wenv); got != "3" {
		t.Errorf("replicas %q in the workload cluster after the upgrade, want 3", got)
	}
	if got := berthtest.LastRecord(t, wenv, "web").Version; got != 2 {
		t.Errorf("last revision in the workload cluster %d, want 2", got)
	}
	berthtest.AssertNoRecords(t, env)

	if err := c.Delete(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitGone(t, c, env.Namespace, "web")
	if got := strings.TrimSpace(berthtest.MustHelm(t, wenv, "list", "-q")); got != "" {
		t.Errorf("helm list in the workload cluster after the delete: %q, want nothing", got)
	}
	berthtest.AssertNoObject(t, wenv, "v1", "ConfigMap", "web-config")
	berthtest.AssertNoRecords(t, wenv)

	// The namespace deleted, its Secrets and accounts go before its Releases: the kubeconfig
	// read last serves the uninstall.
	if err := c.Create(t.Context(), remoteRelease(t, env.Namespace, "web", repo.URL, "deployer", "{}", "workload-kubeconfig")); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitFor(t, c, env.Namespace, "web", "is installed again", readyAt(1))
	if err := env.Client.CoreV1().Secrets(env.Namespace).Delete(t.Context(), "workload-kubeconfig", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.CoreV1().Namespaces().Delete(t.Context(), env.Namespace, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, releasetest.WaitTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := env.Client.CoreV1().Namespaces().Get(ctx, env.Namespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("namespace %s is not gone: %v", env.Namespace, err)
	}
	berthtest.AssertNoObject(t, wenv, "v1", "ConfigMap", "web-config")
	berthtest.AssertNoRecords(t, wenv)
	ctl.running()
}

// TestUnreachableClusterIsNamed stops the workload cluster of one Release: it says which
// cluster does not answer, while a Release of the controller's own cluster is upgraded as
// usual; deleted, it stays until it is suspended, as a Release whose pre-delete hook fails.
func TestUnreachableClusterIsNamed(t *testing.T) {
	env := testenv.New(t)
	workload := testenv.NewCluster(t)
	workload.New(t, env.Namespace)
	c := releasetest.Client(t, env)
	releasetest.Deployer(t, env, "deployer")
	defaultReadsSecrets(t, env)
	kubeconfigSecret(t, env, "workload-kubeconfig", workload.KubeconfigData(t))
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, webChart(t))
	ctl := newController(t, env)
	ctl.start()

	remote := remoteRelease(t, env.Namespace, "remote", repo.URL, "", "{replicas: 2}", "workload-kubeconfig")
	remote.Spec.Timeout = &metav1.Duration{Duration: 20e9}
	local := releaseOf(t, env.Namespace, "local", repo.URL, "web", "deployer", "{replicas: 2}")
	for _, rel := range []*v1alpha1.Release{remote, local} {
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
	}
	releasetest.WaitFor(t, c, env.Namespace, "remote", "is installed", readyAt(1))
	releasetest.WaitFor(t, c, env.Namespace, "local", "is installed", readyAt(1))

	workload.Stop(t)
	host := strings.TrimPrefix(workloadServer(t, workload), "https://")
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"values":{"replicas":3}}}`))
	for _, rel := range []*v1alpha1.Release{remote, local} {
		if err := c.Patch(t.Context(), rel, patch); err != nil {
			t.Fatal(err)
		}
	}
	got := releasetest.WaitFor(t, c, env.Namespace, "remote", "says its cluster is unreachable", func(rel *v1alpha1.Release) bool {
		r := releasetest.Condition(rel, controller.ConditionReady)
		return r != nil && r.ObservedGeneration == rel.Generation && r.Reason == controller.ReasonClusterUnreachable
	})
	if msg := releasetest.Condition(got, controller.ConditionReady).Message; !strings.Contains(msg, "cluster "+host) || strings.Contains(msg, "BEGIN") {
		t.Errorf("Ready message %q, want it to name cluster %s and nothing of its credentials", msg, host)
	}
	releasetest.WaitFor(t, c, env.Namespace, "local", "is upgraded", readyAt(2))

	// Deleted, the Release waits for its cluster, and says how to let it go.
	if err := c.Delete(t.Context(), remote); err != nil {
		t.Fatal(err)
	}
	got = releasetest.WaitFor(t, c, env.Namespace, "remote", "says its uninstall waits for its cluster", func(rel *v1alpha1.Release) bool {
		return len(rel.Status.History) > 0 && rel.Status.History[0].Operation == "uninstall" && rel.Status.History[0].Outcome == "Failed"
	})
	if r := releasetest.Condition(got, controller.ConditionReady); r.Reason != controller.ReasonClusterUnreachable {
		t.Errorf("Ready reason %s (%s), want %s", r.Reason, r.Message, controller.ReasonClusterUnreachable)
	}
	if len(got.Status.Blockers) != 1 || got.Status.Blockers[0].Object != host || !strings.Contains(got.Status.Blockers[0].Next, "suspend") {
		t.Errorf("blockers %+v, want cluster %s, and to suspend the Release if it is gone for good", got.Status.Blockers, host)
	}
	if err := c.Patch(t.Context(), got, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitGone(t, c, env.Namespace, "remote")
	releasetest.WaitFor(t, c, env.Namespace, "local", "stays Ready", readyAt(2))
	ctl.running()
}

// workloadServer is the server URL of the workload cluster's kubeconfig.
func workloadServer(t *testing.T, workload *testenv.Cluster) string {
	t.Helper()
	for _, line := range strings.Split(string(workload.KubeconfigData(t)), "\n") {
		if s, ok := strings.CutPrefix(strings.TrimSpace(line), "server: "); ok {
			return s
		}
	}
	t.Fatal("no server in the workload cluster's kubeconfig")
	return ""
}

// TestKubeconfigThatRunsACommandIsRefused gives a Release a kubeconfig whose user is an exec
// plugin that would leave a file behind: the Release is stalled naming the field, and the
// command never ran.
func TestKubeconfigThatRunsACommandIsRefused(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	defaultReadsSecrets(t, env)
	ran := filepath.Join(t.TempDir(), "ran")
	kubeconfig := `apiVersion: v1
kind: Config
clusters:
- name: workload
  cluster: {server: "https://workload.example.test:6443"}
users:
- name: plugin
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, "touch ` + ran + `"], interactiveMode: Never}
contexts:
- name: workload
  context: {cluster: workload, user: plugin}
current-context: workload
`
	kubeconfigSecret(t, env, "workload-kubeconfig", []byte(kubeconfig))
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, webChart(t))
	ctl := newController(t, env)
	ctl.start()
	if err := c.Create(t.Context(), remoteRelease(t, env.Namespace, "web", repo.URL, "", "{}", "workload-kubeconfig")); err != nil {
		t.Fatal(err)
	}
	// A Release of this cluster that depends on it waits for it, wherever it releases.
	releasetest.Deployer(t, env, "deployer")
	app := releaseOf(t, env.Namespace, "app", repo.URL, "web", "deployer", "{}")
	app.Spec.DependsOn = []v1alpha1.DependencyReference{{Name: "web"}}
	if err := c.Create(t.Context(), app); err != nil {
		t.Fatal(err)
	}
	got := releasetest.WaitFor(t, c, env.Namespace, "web", "is stalled", func(rel *v1alpha1.Release) bool {
		s := releasetest.Condition(rel, controller.ConditionStalled)
		return s != nil && s.Status == metav1.ConditionTrue && rel.Status.ObservedGeneration == rel.Generation
	})
	s := releasetest.Condition(got, controller.ConditionStalled)
	if s.Reason != controller.ReasonInvalidKubeConfig || !strings.Contains(s.Message, "users[plugin].user.exec") ||
		!strings.Contains(s.Message, "Secret/"+env.Namespace+"/workload-kubeconfig") {
		t.Errorf("Stalled %s: %s; want %s naming the Secret and users[plugin].user.exec", s.Reason, s.Message, controller.ReasonInvalidKubeConfig)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the kubeconfig's exec plugin ran")
	}
	releasetest.WaitFor(t, c, env.Namespace, "app", "waits for web", func(rel *v1alpha1.Release) bool {
		r := releasetest.Condition(rel, controller.ConditionReady)
		return r != nil && r.Reason == controller.ReasonDependencyNotReady && strings.Contains(r.Message, "web")
	})
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-config")
	berthtest.AssertNoRecords(t, env)

	// The Secret is watched: a new kubeconfig is read at once (the Release's interval is 10m),
	// and the one refused before is not used again.
	tokenFile := strings.Replace(kubeconfig, `exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, "touch `+ran+`"], interactiveMode: Never}`,
		"tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token", 1)
	patch := []byte(`{"data":{"value":"` + base64.StdEncoding.EncodeToString([]byte(tokenFile)) + `"}}`)
	if _, err := env.Client.CoreV1().Secrets(env.Namespace).Patch(t.Context(), "workload-kubeconfig", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitFor(t, c, env.Namespace, "web", "names the new kubeconfig's field", func(rel *v1alpha1.Release) bool {
		s := releasetest.Condition(rel, controller.ConditionStalled)
		return s != nil && s.Reason == controller.ReasonInvalidKubeConfig && strings.Contains(s.Message, "users[plugin].user.tokenFile")
	})
	ctl.running()
}
