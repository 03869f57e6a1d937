package controller_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestSecretsOfOneKubeconfig gives two Releases a Secret each holding the same kubeconfig, whose
// clients the controller shares. Both release into the workload cluster. Then one Secret gets a
// kubeconfig of a server that does not answer: its Release says its cluster is unreachable at
// once, and the other, upgraded, still releases through the kubeconfig its own Secret holds.
func TestSecretsOfOneKubeconfig(t *testing.T) {
	env := testenv.New(t)
	workload := testenv.NewCluster(t)
	wenv := workload.New(t, env.Namespace)
	c := releasetest.Client(t, env)
	defaultReadsSecrets(t, env)
	kubeconfig := workload.KubeconfigData(t)
	kubeconfigSecret(t, env, "kubeconfig-a", kubeconfig)
	kubeconfigSecret(t, env, "kubeconfig-b", kubeconfig)
	repoURL := releasetest.ServeCharts(t, berthtest.PackageNewChart(t, "named", "0.1.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {count: {{ .Values.count | quote }}}\n",
	}))
	ctl := newController(t, env)
	ctl.start()

	var rels []*v1alpha1.Release
	for _, name := range []string{"a", "b"} {
		rel := releaseOf(t, env.Namespace, name, repoURL, "named", "", "{count: 1}")
		rel.Spec.KubeConfig = &v1alpha1.KubeConfigReference{SecretRef: v1alpha1.KubeConfigSecretReference{Name: "kubeconfig-" + name}}
		rel.Spec.Timeout = &metav1.Duration{Duration: 5e9}
		if err := c.Create(t.Context(), rel); err != nil {
			t.Fatal(err)
		}
		rels = append(rels, rel)
	}
	for _, name := range []string{"a", "b"} {
		releasetest.WaitFor(t, c, env.Namespace, name, "is installed", readyAt(1))
		if _, err := wenv.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("release %s in the workload cluster: %v", name, err)
		}
	}

	server := workloadServer(t, workload)
	silent := strings.Replace(string(kubeconfig), "server: "+server, "server: https://127.0.0.1:1", 1)
	secret, err := env.Client.CoreV1().Secrets(env.Namespace).Get(t.Context(), "kubeconfig-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret.Data["value"] = []byte(silent)
	if _, err := env.Client.CoreV1().Secrets(env.Namespace).Update(t.Context(), secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitFor(t, c, env.Namespace, "b", "says its new cluster is unreachable", func(rel *v1alpha1.Release) bool {
		r := releasetest.Condition(rel, controller.ConditionReady)
		return r != nil && r.Reason == controller.ReasonClusterUnreachable && strings.Contains(r.Message, "127.0.0.1:1")
	})

	if err := c.Patch(t.Context(), rels[0], client.RawPatch(types.MergePatchType, []byte(`{"spec":{"values":{"count":2}}}`))); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitFor(t, c, env.Namespace, "a", "is upgraded", readyAt(2))
	cm, err := wenv.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "a", metav1.GetOptions{})
	if err != nil || cm.Data["count"] != "2" {
		t.Errorf("release a in the workload cluster after its upgrade: %v, %v", cm.Data, err)
	}
	ctl.running()
}
