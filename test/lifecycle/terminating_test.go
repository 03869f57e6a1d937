package lifecycle

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berthdev/berth/internal/kube"
	berthlifecycle "github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// hookJob is a hook Job of event that succeeds.
func hookJob(name, event string) string {
	return `apiVersion: batch/v1
kind: Job
metadata:
  name: ` + name + `
  annotations: {helm.sh/hook: ` + event + `}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: hook, image: example.invalid/hook}]
`
}

// TestUninstallInTerminatingNamespaceSkipsHooks uninstalls a release whose namespace is being
// deleted (its records held by a finalizer, as a slow deletion would leave them): without
// SkipHooksInTerminatingNamespace the uninstall stops on what it cannot create there; with it,
// the hooks are skipped and reported, so is the journal the namespace refuses, and the objects
// and records are deleted.
func TestUninstallInTerminatingNamespaceSkipsHooks(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	ctx := t.Context()
	chart := berthtest.WriteChart(t, "web", map[string]string{
		"templates/cm.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {a: b}\n",
		"templates/pre-delete.yaml":  hookJob("web-drain", "pre-delete"),
		"templates/post-delete.yaml": hookJob("web-cleanup", "post-delete"),
	})
	berthtest.MustBerth(t, env, "install", "web", chart)

	secrets := env.Client.CoreV1().Secrets(env.Namespace)
	records, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=web"})
	if err != nil || len(records.Items) == 0 {
		t.Fatalf("records of web: %v (%d)", err, len(records.Items))
	}
	hold := func(finalizers string) {
		for _, s := range records.Items {
			patch := []byte(`{"metadata":{"finalizers":` + finalizers + `}}`)
			if _, err := secrets.Patch(context.WithoutCancel(ctx), s.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("patch the finalizers of %s: %v", s.Name, err)
			}
		}
	}
	hold(`["example.com/hold"]`)
	t.Cleanup(func() { hold(`null`) })

	if err := env.Client.CoreV1().Namespaces().Delete(ctx, env.Namespace, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Until the API server refuses creates there, the namespace is not terminating for it yet.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"}}
		_, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return berthlifecycle.NamespaceTerminating(err), nil
	})
	if err != nil {
		t.Fatalf("wait until namespace %s refuses creates: %v", env.Namespace, err)
	}

	clients, err := kube.NewClients(env.Config, env.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	store, err := release.Open(release.DriverSecret, clients.Client, clients.Namespace, release.DefaultExpansion(), nil)
	if err != nil {
		t.Fatal(err)
	}
	deps := berthlifecycle.NewDeps(clients, store, release.Self("berth"), nil)
	opts := berthlifecycle.UninstallOptions{Name: "web", WaitOptions: berthlifecycle.WaitOptions{Wait: true, Timeout: time.Minute}}

	_, err = berthlifecycle.Uninstall(ctx, deps, opts)
	if !berthlifecycle.NamespaceTerminating(err) {
		t.Fatalf("uninstall in a terminating namespace without SkipHooksInTerminatingNamespace: %v, want the API server's refusal", err)
	}

	opts.SkipHooksInTerminatingNamespace = true
	res, err := berthlifecycle.Uninstall(ctx, deps, opts)
	if err != nil {
		t.Fatalf("uninstall with SkipHooksInTerminatingNamespace: %v", err)
	}
	if !res.NoJournal {
		t.Errorf("the uninstall does not say it went on without its journal, which the namespace refused")
	}
	var skipped []string
	for _, h := range res.SkippedHooks {
		skipped = append(skipped, string(h.Event)+" "+h.Hook.Name)
		if h.Reason == "" {
			t.Errorf("skipped hook %s without a reason", h.Hook)
		}
	}
	if len(skipped) != 2 || skipped[0] != string(resource.HookPreDelete)+" web-drain" || skipped[1] != string(resource.HookPostDelete)+" web-cleanup" {
		t.Errorf("skipped hooks %q, want the pre-delete hook web-drain, then the post-delete hook web-cleanup", skipped)
	}
	for _, name := range []string{"web-drain", "web-cleanup"} {
		if _, err := env.Client.BatchV1().Jobs(env.Namespace).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("hook Job %s: %v, want it never created", name, err)
		}
	}
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-config")
	// The records are deleted (their finalizer holds them until the cleanup).
	left, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range left.Items {
		if s.DeletionTimestamp.IsZero() {
			t.Errorf("record %s is not deleted", s.Name)
		}
	}
}
