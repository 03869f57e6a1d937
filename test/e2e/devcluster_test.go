package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/berthdev/berth/internal/testenv"
)

// These tests check that devcluster behaves as a cluster does in the ways
// berth relies on: controllers, the simulated kubelet, garbage collection
// and admission webhooks.

// waitTimeout bounds every wait; it is a safety net, not an expectation.
const waitTimeout = 2 * time.Minute

func TestDevclusterAPIReady(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	ctx := t.Context()

	body, err := env.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil || string(body) != "ok" {
		t.Errorf("GET /readyz: %q, error %v; want ok", body, err)
	}

	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	if !slices.ContainsFunc(nodes.Items, nodeReady) {
		t.Errorf("none of %d nodes is Ready", len(nodes.Items))
	}

	groups, err := env.Client.Discovery().ServerGroups()
	if err != nil {
		t.Fatalf("discover API groups: %v", err)
	}
	var served []string
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			served = append(served, v.GroupVersion)
		}
	}
	for _, want := range []string{"apps/v1", "batch/v1", "admissionregistration.k8s.io/v1", "coordination.k8s.io/v1"} {
		if !slices.Contains(served, want) {
			t.Errorf("discovery does not list %s", want)
		}
	}
}

func nodeReady(n corev1.Node) bool {
	return slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
}

// webDeployment runs two Pods labeled app: web that never finish.
const webDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: example.invalid/web
        ports:
        - containerPort: 8080
`

func TestDevclusterDeploymentAvailable(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	ctx := t.Context()
	env.Apply(t, webDeployment)
	env.Apply(t, `
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
`)
	waitForDeployment(t, env, "web")

	pods, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatalf("list Pods: %v", err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("%d Pods, want 2", len(pods.Items))
	}
	var podIPs []string
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || !podReady(p) || p.Status.PodIP == "" {
			t.Errorf("Pod %s is %s, ready %v, IP %q; want Running, ready, with an IP", p.Name, p.Status.Phase, podReady(p), p.Status.PodIP)
		}
		podIPs = append(podIPs, p.Status.PodIP)
	}
	slices.Sort(podIPs)

	waitUntil(t, "the EndpointSlices of Service web to hold the Pods as ready", func(ctx context.Context) error {
		list, err := env.Client.DiscoveryV1().EndpointSlices(env.Namespace).List(ctx,
			metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			return err
		}
		var ready []string
		for _, s := range list.Items {
			for _, ep := range s.Endpoints {
				if ptr.Deref(ep.Conditions.Ready, false) {
					ready = append(ready, strings.Join(ep.Addresses, ","))
				}
			}
		}
		slices.Sort(ready)
		if !slices.Equal(ready, podIPs) {
			return fmt.Errorf("ready endpoints %v, want the Pod IPs %v", ready, podIPs)
		}
		return nil
	})
}

func podReady(p corev1.Pod) bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

// waitForDeployment waits until the Deployment is Available with all its
// replicas.
func waitForDeployment(t *testing.T, env *testenv.Env, name string) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	waitUntil(t, fmt.Sprintf("Deployment/%s/%s to be available", env.Namespace, name), func(ctx context.Context) error {
		var err error
		d, err = env.Client.AppsV1().Deployments(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		available := slices.ContainsFunc(d.Status.Conditions, func(c appsv1.DeploymentCondition) bool {
			return c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue
		})
		if !available || d.Status.AvailableReplicas != ptr.Deref(d.Spec.Replicas, 1) {
			return fmt.Errorf("status %+v", d.Status)
		}
		return nil
	})
	return d
}

func TestDevclusterJobCompletes(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	createJob(t, env, newJob("hook", 0, map[string]string{"devcluster.berth.dev/run": "1s"}))
	job := waitForJob(t, env, "hook", batchv1.JobComplete)
	if job.Status.Succeeded != 1 || job.Status.Failed != 0 {
		t.Errorf("Job succeeded %d, failed %d; want 1 and 0", job.Status.Succeeded, job.Status.Failed)
	}

	pods := jobPods(t, env, job)
	if len(pods) != 1 {
		t.Fatalf("%d Pods, want 1", len(pods))
	}
	if pods[0].Status.Phase != corev1.PodSucceeded {
		t.Errorf("Pod %s is %s, want Succeeded", pods[0].Name, pods[0].Status.Phase)
	}
	if s := terminated(t, pods[0]); s.ExitCode != 0 || s.Reason != "Completed" {
		t.Errorf("Pod %s: container terminated with exit code %d, reason %q; want 0, Completed", pods[0].Name, s.ExitCode, s.Reason)
	}
}

func TestDevclusterJobFailsAfterBackoffLimit(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	createJob(t, env, newJob("hook", 2, map[string]string{
		"devcluster.berth.dev/outcome":   "fail",
		"devcluster.berth.dev/exit-code": "3",
	}))
	job := waitForJob(t, env, "hook", batchv1.JobFailed)
	if c := jobFinished(job); c.Reason != batchv1.JobReasonBackoffLimitExceeded {
		t.Errorf("Job failed with reason %q, want %s", c.Reason, batchv1.JobReasonBackoffLimitExceeded)
	}
	if job.Status.Failed != 3 {
		t.Errorf("Job status.failed = %d, want 3", job.Status.Failed)
	}

	pods := jobPods(t, env, job)
	if len(pods) != 3 {
		t.Errorf("%d Pods, want 3", len(pods))
	}
	for _, p := range pods {
		if p.Status.Phase != corev1.PodFailed {
			t.Errorf("Pod %s is %s, want Failed", p.Name, p.Status.Phase)
		}
		if s := terminated(t, p); s.ExitCode != 3 {
			t.Errorf("Pod %s: container exit code %d, want 3", p.Name, s.ExitCode)
		}
	}
}

func TestDevclusterEvictedPodIsReplaced(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	createJob(t, env, newJob("hook", 2, map[string]string{
		"devcluster.berth.dev/outcome":  "evict",
		"devcluster.berth.dev/attempts": "1",
	}))
	job := waitForJob(t, env, "hook", batchv1.JobComplete)
	if job.Status.Failed != 1 || job.Status.Succeeded != 1 {
		t.Errorf("Job failed %d, succeeded %d; want 1 and 1", job.Status.Failed, job.Status.Succeeded)
	}

	pods := jobPods(t, env, job)
	if len(pods) != 2 {
		t.Fatalf("%d Pods, want 2", len(pods))
	}
	first, second := pods[0], pods[1]
	disrupted := slices.ContainsFunc(first.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue
	})
	if first.Status.Phase != corev1.PodFailed || first.Status.Reason != "Evicted" || !disrupted {
		t.Errorf("first Pod %s is %s, reason %q, DisruptionTarget %v; want Failed, Evicted, true",
			first.Name, first.Status.Phase, first.Status.Reason, disrupted)
	}
	if second.Status.Phase != corev1.PodSucceeded {
		t.Errorf("second Pod %s is %s, want Succeeded", second.Name, second.Status.Phase)
	}
}

func TestDevclusterTTLAfterFinished(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	_, jobs := listAndWatch(t, env, "batch/v1", "Job")
	job := newJob("hook", 0, nil)
	job.Spec.TTLSecondsAfterFinished = ptr.To[int32](0)
	uid := createJob(t, env, job).UID

	completed := false
	watchUntil(t, jobs, "the finished Job to be deleted", func(typ watch.EventType, obj *unstructured.Unstructured) bool {
		if obj.GetUID() != uid {
			return false
		}
		var j batchv1.Job
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &j); err != nil {
			t.Fatalf("decode Job: %v", err)
		}
		if c := jobFinished(&j); c != nil && c.Type == batchv1.JobComplete {
			completed = true
		}
		return typ == watch.Deleted
	})
	if !completed {
		t.Error("the Job was deleted without being seen Complete")
	}
	_, err := env.Client.BatchV1().Jobs(env.Namespace).Get(t.Context(), "hook", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("get the deleted Job: %v, want NotFound", err)
	}
}

func TestDevclusterForegroundDeletion(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	env.Apply(t, webDeployment)
	waitForDeployment(t, env, "web")

	_, deployments := listAndWatch(t, env, "apps/v1", "Deployment")
	replicaSets, rsWatch := listAndWatch(t, env, "apps/v1", "ReplicaSet")
	pods, podWatch := listAndWatch(t, env, "v1", "Pod")
	if len(replicaSets) != 1 || len(pods) != 2 {
		t.Fatalf("%d ReplicaSets and %d Pods, want 1 and 2", len(replicaSets), len(pods))
	}

	err := env.Client.AppsV1().Deployments(env.Namespace).Delete(t.Context(), "web",
		metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
	if err != nil {
		t.Fatalf("delete Deployment: %v", err)
	}

	blocked := false
	var deletedAt string
	watchUntil(t, deployments, "the Deployment to be deleted", func(typ watch.EventType, obj *unstructured.Unstructured) bool {
		if obj.GetDeletionTimestamp() != nil && slices.Contains(obj.GetFinalizers(), metav1.FinalizerDeleteDependents) {
			blocked = true
		}
		if typ != watch.Deleted {
			return false
		}
		deletedAt = obj.GetResourceVersion()
		return true
	})
	if !blocked {
		t.Errorf("the Deployment was never seen with a deletionTimestamp and the %s finalizer", metav1.FinalizerDeleteDependents)
	}

	// The watches are separate streams, so the order in which their events
	// arrive proves nothing. All resources share etcd's revision, so the
	// resourceVersions of the deletions order them.
	for _, dependents := range []struct {
		kind   string
		listed []unstructured.Unstructured
		w      watch.Interface
	}{{"ReplicaSet", replicaSets, rsWatch}, {"Pod", pods, podWatch}} {
		for name, rv := range awaitDeletions(t, dependents.kind, dependents.listed, dependents.w) {
			if c, err := resourceversion.CompareResourceVersion(rv, deletedAt); err != nil || c >= 0 {
				t.Errorf("%s %s deleted at resourceVersion %s, want before the Deployment (%s); error %v",
					dependents.kind, name, rv, deletedAt, err)
			}
		}
	}

	for _, kind := range [][2]string{{"apps/v1", "Deployment"}, {"apps/v1", "ReplicaSet"}, {"v1", "Pod"}} {
		list, err := env.Resource(t, kind[0], kind[1]).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list %ss: %v", kind[1], err)
		}
		if len(list.Items) != 0 {
			t.Errorf("%d %ss left, want none", len(list.Items), kind[1])
		}
	}
}

// awaitDeletions reads w until every object listed, and every one added
// since, has been deleted, and returns the resourceVersion of each deletion
// by object name.
func awaitDeletions(t *testing.T, kind string, listed []unstructured.Unstructured, w watch.Interface) map[string]string {
	t.Helper()
	pending := map[types.UID]bool{}
	for _, o := range listed {
		pending[o.GetUID()] = true
	}
	deleted := map[string]string{}
	watchUntil(t, w, fmt.Sprintf("the %ss to be deleted", kind), func(typ watch.EventType, obj *unstructured.Unstructured) bool {
		switch typ {
		case watch.Added:
			pending[obj.GetUID()] = true
		case watch.Deleted:
			delete(pending, obj.GetUID())
			deleted[obj.GetName()] = obj.GetResourceVersion()
		}
		return len(pending) == 0
	})
	return deleted
}

var configMapDeletes = []admissionregistrationv1.RuleWithOperations{testenv.Rule(
	[]admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
	[]string{""}, []string{"v1"}, []string{"configmaps"},
)}

func TestDevclusterWebhookBlocksDelete(t *testing.T) {
	t.Parallel()
	const webhook = "delete-guard.configmaps.webhooks.berth.dev"
	tests := []struct {
		name string
		mode testenv.Mode
		stop bool   // stop the webhook's server before the DELETE
		want string // in the error, besides the webhook's name; the API server's words for a
		// webhook it cannot reach vary, so none is asked of them
	}{
		{"server-down", testenv.Allow(), true, ""},
		{"server-denies", testenv.Deny("settings are pinned"), false, "settings are pinned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := testenv.New(t)
			if err := createConfigMap(t, env, "settings"); err != nil {
				t.Fatalf("create ConfigMap: %v", err)
			}
			wh := testenv.StartWebhook(t, tt.mode)
			env.RegisterValidatingWebhook(t, wh, testenv.WebhookOptions{
				Name:          webhook,
				Rules:         configMapDeletes,
				FailurePolicy: admissionregistrationv1.Fail,
			})
			if tt.stop {
				wh.Stop()
			}

			configMaps := env.Client.CoreV1().ConfigMaps(env.Namespace)
			err := configMaps.Delete(t.Context(), "settings", metav1.DeleteOptions{})
			if err == nil || !strings.Contains(err.Error(), webhook) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("delete: error %v, want one naming %s and saying %q", err, webhook, tt.want)
			}
			if _, err := configMaps.Get(t.Context(), "settings", metav1.GetOptions{}); err != nil {
				t.Errorf("get the ConfigMap after the blocked delete: %v", err)
			}
		})
	}
}

// newJob returns a Job of one container that may retry backoffLimit times;
// annotations on its Pods tell devcluster how they run.
func newJob(name string, backoffLimit int32, annotations map[string]string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoffLimit,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "hook", Image: "example.invalid/hook"}},
				},
			},
		},
	}
}

func createJob(t *testing.T, env *testenv.Env, job *batchv1.Job) *batchv1.Job {
	t.Helper()
	created, err := env.Client.BatchV1().Jobs(env.Namespace).Create(t.Context(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Job/%s/%s: %v", env.Namespace, job.Name, err)
	}
	return created
}

// waitForJob waits until the Job has finished, as want, and returns it.
func waitForJob(t *testing.T, env *testenv.Env, name string, want batchv1.JobConditionType) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	waitUntil(t, fmt.Sprintf("Job/%s/%s to finish", env.Namespace, name), func(ctx context.Context) error {
		var err error
		job, err = env.Client.BatchV1().Jobs(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if jobFinished(job) == nil {
			return fmt.Errorf("status %+v", job.Status)
		}
		return nil
	})
	if c := jobFinished(job); c.Type != want {
		t.Fatalf("Job/%s/%s finished %s (%s: %s), want %s", env.Namespace, name, c.Type, c.Reason, c.Message, want)
	}
	return job
}

// jobFinished returns the Job's true Complete or Failed condition, or nil
// while it runs.
func jobFinished(job *batchv1.Job) *batchv1.JobCondition {
	for i, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

// jobPods returns the Pods of the Job, oldest first.
func jobPods(t *testing.T, env *testenv.Env, job *batchv1.Job) []corev1.Pod {
	t.Helper()
	pods, err := env.Client.CoreV1().Pods(env.Namespace).List(t.Context(),
		metav1.ListOptions{LabelSelector: batchv1.ControllerUidLabel + "=" + string(job.UID)})
	if err != nil {
		t.Fatalf("list Pods of Job/%s/%s: %v", job.Namespace, job.Name, err)
	}
	slices.SortStableFunc(pods.Items, func(a, b corev1.Pod) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	return pods.Items
}

// terminated returns the state of the Pod's only container, failing the test
// unless it has terminated.
func terminated(t *testing.T, pod corev1.Pod) *corev1.ContainerStateTerminated {
	t.Helper()
	if n := len(pod.Status.ContainerStatuses); n != 1 {
		t.Fatalf("Pod %s has %d container statuses, want 1", pod.Name, n)
	}
	s := pod.Status.ContainerStatuses[0].State.Terminated
	if s == nil {
		t.Fatalf("Pod %s: container has not terminated: %+v", pod.Name, pod.Status.ContainerStatuses[0].State)
	}
	return s
}

// waitUntil polls check until it returns nil, failing the test with its last
// error when waitTimeout passes first.
func waitUntil(t *testing.T, what string, check func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, waitTimeout, true,
		func(ctx context.Context) (bool, error) {
			last = check(ctx)
			return last == nil, nil
		})
	if err != nil {
		t.Fatalf("wait for %s: %v (last: %v)", what, err, last)
	}
}

// listAndWatch lists the objects of a kind in the test's namespace and
// watches them from that list on, until the test ends.
func listAndWatch(t *testing.T, env *testenv.Env, apiVersion, kind string) ([]unstructured.Unstructured, watch.Interface) {
	t.Helper()
	ri := env.Resource(t, apiVersion, kind)
	list, err := ri.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list %ss: %v", kind, err)
	}
	w, err := ri.Watch(t.Context(), metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatalf("watch %ss: %v", kind, err)
	}
	t.Cleanup(w.Stop)
	return list.Items, w
}

// watchUntil hands the events of w to done until it returns true, failing the
// test when the watch ends or fails, or waitTimeout passes first.
func watchUntil(t *testing.T, w watch.Interface, what string, done func(watch.EventType, *unstructured.Unstructured) bool) {
	t.Helper()
	timeout := time.NewTimer(waitTimeout)
	defer timeout.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("wait for %s: the watch ended", what)
			}
			if ev.Type == watch.Error {
				t.Fatalf("wait for %s: %v", what, apierrors.FromObject(ev.Object))
			}
			obj, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				t.Fatalf("wait for %s: %s event holds a %T", what, ev.Type, ev.Object)
			}
			if done(ev.Type, obj) {
				return
			}
		case <-timeout.C:
			t.Fatalf("wait for %s: not within %s", what, waitTimeout)
		}
	}
}
