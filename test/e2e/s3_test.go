package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"

	releasev1 "helm.sh/helm/v4/pkg/release/v1"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// drainChart is a release with a Deployment, a ConfigMap and a pre-delete hook Job that runs for
// a few seconds (or fails, with outcome fail).
func drainChart(t *testing.T, outcome string) string {
	files := map[string]string{
		"templates/drain.yaml": `
apiVersion: batch/v1
kind: Job
metadata:
  name: drain
  annotations:
    helm.sh/hook: pre-delete
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations:
        devcluster.berth.dev/run: 3s
        devcluster.berth.dev/outcome: ` + outcome + `
    spec:
      restartPolicy: Never
      containers: [{name: drain, image: example.invalid/drain}]
`,
	}
	for k, v := range webChart {
		files[k] = v
	}
	return berthtest.WriteChart(t, "drain", files)
}

// S3: no object of the release is deleted before every pre-delete hook completed.
func TestS3UninstallWaitsForPreDeleteHook(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	berthtest.MustBerth(t, env, "install", "web", drainChart(t, "succeed"), "--wait")

	// Watch the hook Job and the release's objects from now on; one etcd orders all their changes,
	// so resourceVersions tell which came first.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	type change struct {
		what string
		rv   string
	}
	changes := make(chan change, 100)
	follow := func(apiVersion, kind string, judge func(watch.EventType, *unstructured.Unstructured) string) {
		list, err := env.Resource(t, apiVersion, kind).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := env.Resource(t, apiVersion, kind).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				if u, ok := ev.Object.(*unstructured.Unstructured); ok {
					if what := judge(ev.Type, u); what != "" {
						changes <- change{what, u.GetResourceVersion()}
					}
				}
			}
		}()
	}
	deleting := func(typ watch.EventType, u *unstructured.Unstructured) string {
		if typ == watch.Deleted || u.GetDeletionTimestamp() != nil {
			return "deleting " + u.GetKind() + "/" + u.GetName()
		}
		return ""
	}
	follow("batch/v1", "Job", func(_ watch.EventType, u *unstructured.Unstructured) string {
		var job batchv1.Job
		if err := runtimeConvert(u, &job); err == nil {
			for _, c := range job.Status.Conditions {
				if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
					return "hook complete"
				}
			}
		}
		return ""
	})
	follow("apps/v1", "Deployment", deleting)
	follow("v1", "ConfigMap", func(typ watch.EventType, u *unstructured.Unstructured) string {
		if u.GetName() == "settings" {
			return deleting(typ, u)
		}
		return ""
	})

	berthtest.MustBerth(t, env, "uninstall", "web")
	berthtest.AssertNotRecorded(t, env, "web")

	var hookDone string
	var firstDeletion change
	deadline := time.After(30 * time.Second)
	for hookDone == "" || firstDeletion.rv == "" {
		select {
		case c := <-changes:
			switch {
			case c.what == "hook complete" && hookDone == "":
				hookDone = c.rv
			case strings.HasPrefix(c.what, "deleting") && firstDeletion.rv == "":
				firstDeletion = c
			}
		case <-deadline:
			t.Fatalf("saw hook completion at %q and first deletion %+v; want both", hookDone, firstDeletion)
		}
	}
	if cmp, err := resourceversion.CompareResourceVersion(hookDone, firstDeletion.rv); err != nil || cmp >= 0 {
		t.Errorf("%s (resourceVersion %s) before the pre-delete hook completed (resourceVersion %s)", firstDeletion.what, firstDeletion.rv, hookDone)
	}
}

// S3: a pre-delete hook that fails stops the uninstall before any deletion; the release stays
// installed and usable, and a step of a plan of its own records the hook's failed run.
func TestS3FailingPreDeleteHookDeletesNothing(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := drainChart(t, "fail")
	berthtest.MustBerth(t, env, "install", "web", chart, "--wait")
	_, stderr, err := berthtest.Berth(t, env, "uninstall", "web")
	if err == nil || !strings.Contains(err.Error(), "pre-delete") || !strings.Contains(err.Error(), "nothing was deleted") {
		t.Fatalf("uninstall with a failing pre-delete hook: %v; want it to stop naming the hook", err)
	}
	if !strings.Contains(stderr, "record/stopped/1") {
		t.Errorf("no step records how far the uninstall got:\n%s", stderr)
	}
	rel := berthtest.LastRecord(t, env, "web")
	if rel.Info.Status != "deployed" {
		t.Errorf("release is %s, want still deployed", rel.Info.Status)
	}
	if got := berthtest.RecordedHook(t, rel, "drain").LastRun.Phase; got != releasev1.HookPhaseFailed {
		t.Errorf("the pre-delete hook's last run is recorded as %q, want %q", got, releasev1.HookPhaseFailed)
	}
	assertNotDeleting(t, env, "web")
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "settings", metav1.GetOptions{})
	if err != nil || cm.DeletionTimestamp != nil {
		t.Errorf("ConfigMap settings: %v, deletionTimestamp %v; want untouched", err, cm.GetDeletionTimestamp())
	}
	// Still usable: an upgrade works.
	berthtest.MustBerth(t, env, "upgrade", "web", chart, "--set", "x=1", "--wait")
}

func runtimeConvert(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}
