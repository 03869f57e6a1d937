package e2e

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/testenv"
)

// These tests check the test environment itself: the cluster, the namespace
// per test and the admission webhook helpers.

func TestEnvNamespace(t *testing.T) {
	env := testenv.New(t)
	ns, err := env.Client.CoreV1().Namespaces().Get(t.Context(), env.Namespace, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get namespace: %v", err)
	}
	if ns.Status.Phase != corev1.NamespaceActive {
		t.Errorf("namespace %s is %s, want Active", env.Namespace, ns.Status.Phase)
	}

	cm := env.Apply(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  color: blue
`)
	if cm.GetNamespace() != env.Namespace || cm.GetUID() == "" {
		t.Errorf("applied ConfigMap is %s/%s (uid %q), want it stored in %s", cm.GetNamespace(), cm.GetName(), cm.GetUID(), env.Namespace)
	}
	got, err := env.Resource(t, "v1", "ConfigMap").Get(t.Context(), "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get ConfigMap: %v", err)
	}
	if got.GetUID() != cm.GetUID() {
		t.Errorf("ConfigMap uid %s, want %s", got.GetUID(), cm.GetUID())
	}
}

var configMapCreates = []admissionregistrationv1.RuleWithOperations{testenv.Rule(
	[]admissionregistrationv1.OperationType{admissionregistrationv1.Create},
	[]string{""}, []string{"v1"}, []string{"configmaps"},
)}

func createConfigMap(t *testing.T, env *testenv.Env, name string) error {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Create(t.Context(), cm, metav1.CreateOptions{})
	return err
}

func TestWebhookModes(t *testing.T) {
	env := testenv.New(t)
	wh := testenv.StartWebhook(t, testenv.Deny("configmaps are frozen"))
	env.RegisterValidatingWebhook(t, wh, testenv.WebhookOptions{
		Name:           "freeze.configmaps.berth.dev",
		Rules:          configMapCreates,
		TimeoutSeconds: 2,
	})

	err := createConfigMap(t, env, "denied")
	if err == nil || !strings.Contains(err.Error(), "freeze.configmaps.berth.dev") || !strings.Contains(err.Error(), "configmaps are frozen") {
		t.Errorf("create while denying: error %v, want the webhook's name and message", err)
	}
	if wh.Requests() == 0 {
		t.Error("webhook counted no requests")
	}

	wh.SetMode(testenv.Allow())
	if err := createConfigMap(t, env, "allowed"); err != nil {
		t.Errorf("create while allowing: %v", err)
	}

	wh.SetMode(testenv.Hang())
	err = createConfigMap(t, env, "hung")
	if err == nil || !strings.Contains(err.Error(), "freeze.configmaps.berth.dev") {
		t.Errorf("create while hanging: error %v, want the webhook named", err)
	}

	// How the API server words a webhook it cannot reach varies ("connection refused", "broken
	// pipe", ...): what counts is that the request failed, naming the webhook, which got nothing.
	wh.Stop()
	before := wh.Requests()
	err = createConfigMap(t, env, "down")
	if err == nil || !strings.Contains(err.Error(), "freeze.configmaps.berth.dev") {
		t.Errorf("create while the webhook is down: error %v, want the webhook named", err)
	}
	if wh.Requests() != before {
		t.Errorf("the stopped webhook answered %d requests", wh.Requests()-before)
	}
	if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "down", metav1.GetOptions{}); err == nil {
		t.Error("the ConfigMap was created while its webhook was down")
	}
}

func TestWebhookIgnoresOtherNamespaces(t *testing.T) {
	env := testenv.New(t)
	wh := testenv.StartWebhook(t, testenv.Deny("not here"))
	env.RegisterValidatingWebhook(t, wh, testenv.WebhookOptions{Rules: configMapCreates})

	other := testenv.New(t)
	before := wh.Requests()
	if err := createConfigMap(t, other, "elsewhere"); err != nil {
		t.Errorf("create in another namespace: %v", err)
	}
	if wh.Requests() != before {
		t.Errorf("webhook received %d requests from another namespace", wh.Requests()-before)
	}
}
