package controllerchart

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// waitTimeout bounds each wait.
const waitTimeout = 2 * time.Minute

// releaseCRD is the name of the Release CRD.
const releaseCRD = "releases.berth.dev"

// chartDir is the berth-controller chart of the repository.
func chartDir(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "charts", "berth-controller")
}

// waitUntil polls cond until it holds, fails or the wait times out.
func waitUntil(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, waitTimeout, true, cond); err != nil {
		t.Fatalf("wait until %s: %v", what, err)
	}
}

// waitForDeployment waits until the Deployment is Available with all its replicas.
func waitForDeployment(t *testing.T, env *testenv.Env, name string) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	waitUntil(t, "Deployment/"+env.Namespace+"/"+name+" is available", func(ctx context.Context) (bool, error) {
		var err error
		d, err = env.Client.AppsV1().Deployments(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		available := slices.ContainsFunc(d.Status.Conditions, func(c appsv1.DeploymentCondition) bool {
			return c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue
		})
		return available && d.Status.AvailableReplicas == ptr.Deref(d.Spec.Replicas, 1), nil
	})
	return d
}

// waitForCRD waits until the Release CRD is Established.
func waitForCRD(t *testing.T, env *testenv.Env) {
	t.Helper()
	c := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions()
	waitUntil(t, "CRD "+releaseCRD+" is Established", func(ctx context.Context) (bool, error) {
		crd, err := c.Get(ctx, releaseCRD, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
			return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
		}), nil
	})
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the ServiceAccount name of
// namespace ns, with a token the API server issues for it, and returns its path.
func serviceAccountKubeconfig(t *testing.T, env *testenv.Env, ns, name string) string {
	t.Helper()
	token, err := env.Client.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of ServiceAccount %s/%s: %v", ns, name, err)
	}
	ca := env.Config.CAData
	if len(ca) == 0 {
		if ca, err = os.ReadFile(env.Config.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["devcluster"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "devcluster", AuthInfo: name}
	cfg.CurrentContext = name
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// runChartController runs `berth controller` in the test with the arguments of the chart's
// Deployment d, as the Deployment's ServiceAccount, until stop is called or the test ends: the
// probes and metrics endpoints are turned off (several tests share the machine's ports) and the
// chart cache is a temporary directory.
func runChartController(t *testing.T, env *testenv.Env, d *appsv1.Deployment) (stop func()) {
	t.Helper()
	container := d.Spec.Template.Spec.Containers[0]
	args := slices.Clone(container.Args)
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			args[i] = "--metrics-bind-address=0"
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			args[i] = "--health-probe-bind-address=0"
		case strings.HasPrefix(a, "--cache-dir="):
			args[i] = "--cache-dir=" + t.TempDir()
		}
	}
	kubeconfig := serviceAccountKubeconfig(t, env, d.Namespace, d.Spec.Template.Spec.ServiceAccountName)
	args = append(args, "--kubeconfig", kubeconfig)

	ctx, cancel := context.WithCancel(context.Background())
	var stderr berthtest.LockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- cli.Run(ctx, cli.Streams{In: strings.NewReader(""), Out: &stderr, ErrOut: &stderr}, args)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("berth %s: %v", strings.Join(args, " "), err)
			}
			if t.Failed() {
				t.Logf("berth controller's log:\n%s", stderr.String())
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// deployer creates the ServiceAccount name with every right in namespace ns and none beyond it:
// the account a Release of ns acts as.
func deployer(t *testing.T, env *testenv.Env, ns, name string) {
	t.Helper()
	ctx := t.Context()
	if _, err := env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// releaseClient returns a client of the controller's scheme, with admin rights.
func releaseClient(t *testing.T, env *testenv.Env) client.Client {
	t.Helper()
	scheme, err := controller.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// releaseLifecycle creates a Release of a small chart in namespace ns, acting as a deployer
// ServiceAccount of ns, waits until the controller installed it (Ready, its ConfigMap there, an
// event recorded), then deletes it and waits until the controller uninstalled it and removed its
// finalizer.
func releaseLifecycle(t *testing.T, env *testenv.Env, ns string) {
	t.Helper()
	ctx := t.Context()
	deployer(t, env, ns, "deployer")
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, berthtest.WriteChart(t, "hello", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hello}\ndata: {greeting: hello}\n",
	}))
	var rel v1alpha1.Release
	err := yaml.Unmarshal([]byte(`
apiVersion: berth.dev/v1alpha1
kind: Release
metadata: {name: hello, namespace: `+ns+`}
spec:
  serviceAccountName: deployer
  chart: {repository: "`+repo.URL+`", name: hello}
`), &rel)
	if err != nil {
		t.Fatal(err)
	}
	c := releaseClient(t, env)
	if err := c.Create(ctx, &rel); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(&rel)
	waitUntil(t, "Release "+key.String()+" is Ready", func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, &rel); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(rel.Status.Conditions, controller.ConditionReady), nil
	})
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Get(ctx, "hello", metav1.GetOptions{}); err != nil {
		t.Errorf("ConfigMap of the Release's chart: %v", err)
	}
	waitUntil(t, "an event says the Release was installed", func(ctx context.Context) (bool, error) {
		list, err := env.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
			return e.Regarding.Name == "hello" && e.Reason == controller.ReasonInstallSucceeded
		}), nil
	})

	if err := c.Delete(ctx, &rel); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "Release "+key.String()+" is gone", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, key, &v1alpha1.Release{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Get(ctx, "hello", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap of the uninstalled Release: %v, want it gone", err)
	}
}
