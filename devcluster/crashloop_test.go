package main

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestPodsRegressAfterReady runs what a release's Pods do when they break after they were Ready:
// a Deployment's Pod that crash-loops (outcome crashloop) and a bare Pod that ends Failed
// (outcome fail), each after devcluster.berth.dev/run.
func TestPodsRegressAfterReady(t *testing.T) {
	_, dir := startUp(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("crashloop", func(t *testing.T) {
		t.Parallel()
		testCrashLoop(t, client, dir)
	})
	t.Run("fail", func(t *testing.T) {
		t.Parallel()
		testFailAfterRun(t, client, dir)
	})
	t.Run("deployment-fail", func(t *testing.T) {
		t.Parallel()
		testDeploymentPodFails(t, client, dir)
	})
}

// testCrashLoop: the Deployment is available, its Pod Ready; after run the Pod stays Running but
// is not Ready, its container waits in CrashLoopBackOff with a rising restartCount and its last
// instance terminated with the exit code; the Deployment has no available replica; the log of
// the container, current and previous, is the last instance's.
func testCrashLoop(t *testing.T, client kubernetes.Interface, dir string) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	ns := metav1.NamespaceDefault
	const logText = "listening on :8080\npanic: lost the database"
	labels := map[string]string{"app": "crasher"}
	pods, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=crasher"})
	if err != nil {
		t.Fatal(err)
	}
	defer pods.Stop()
	deployments, err := client.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", "crasher").String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer deployments.Stop()

	one := int32(1)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "crasher"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{
					annotationOutcome:         "crashloop",
					annotationPrefix + "run":  "3s",
					annotationRestartInterval: "1s",
					annotationExitCode:        "3",
					annotationLog:             logText,
				}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.invalid/web"}}},
			},
		},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(dir, "logs")

	if _, err := until(ctx, deployments, deploymentAvailable(1)); err != nil {
		t.Fatalf("Deployment crasher never had an available replica: %v; logs in %s", err, logs)
	}
	if _, err := until(ctx, pods, podCondition(corev1.PodReady, corev1.ConditionTrue)); err != nil {
		t.Fatalf("Pod of crasher never Ready: %v", err)
	}
	e, err := until(ctx, pods, podCondition(corev1.PodReady, corev1.ConditionFalse))
	if err != nil {
		t.Fatalf("Pod of crasher never stopped being Ready: %v; logs in %s", err, logs)
	}
	pod := e.Object.(*corev1.Pod)
	if pod.Status.Phase != corev1.PodRunning {
		t.Errorf("crash-looping Pod in phase %s, want Running", pod.Status.Phase)
	}
	if c := condition(pod, corev1.ContainersReady); c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotReady" {
		t.Errorf("ContainersReady = %+v, want False, reason ContainersNotReady", c)
	}
	if c := condition(pod, corev1.PodReady); c.Reason != "ContainersNotReady" || c.Message != "containers with unready status: [web]" {
		t.Errorf("Ready = %+v, want reason ContainersNotReady naming web", c)
	}
	first := checkCrashLooping(t, pod)

	// The restart count rises, one restart at a time, while the Pod stays Running and not Ready.
	last := first
	_, err = until(ctx, pods, func(e watch.Event) (bool, error) {
		p, ok := e.Object.(*corev1.Pod)
		if !ok {
			return false, nil
		}
		if p.Status.Phase != corev1.PodRunning || condition(p, corev1.PodReady).Status != corev1.ConditionFalse {
			t.Errorf("crash-looping Pod in phase %s, Ready %s; want Running, not Ready", p.Status.Phase, condition(p, corev1.PodReady).Status)
		}
		n := checkCrashLooping(t, p)
		if n != last && n != last+1 {
			t.Errorf("restartCount went from %d to %d, want one more", last, n)
		}
		last = n
		return n >= first+2, nil
	})
	if err != nil {
		t.Fatalf("restartCount stayed at %d: %v; logs in %s", last, err, logs)
	}
	if _, err := until(ctx, deployments, deploymentAvailable(0)); err != nil {
		t.Fatalf("Deployment crasher still available: %v", err)
	}

	// A kubelet serves a crash-looping container's last instance for its log and its previous log.
	podLogs := func(opts *corev1.PodLogOptions) (string, error) {
		b, err := client.CoreV1().Pods(ns).GetLogs(pod.Name, opts).DoRaw(ctx)
		return string(b), err
	}
	want := logText + "\n"
	if got, err := podLogs(&corev1.PodLogOptions{Container: "web"}); err != nil || got != want {
		t.Errorf("log = %q, %v; want %q", got, err, want)
	}
	if got, err := podLogs(&corev1.PodLogOptions{Container: "web", Previous: true}); err != nil || got != want {
		t.Errorf("previous log = %q, %v; want %q", got, err, want)
	}
	tail := int64(1)
	if got, err := podLogs(&corev1.PodLogOptions{Previous: true, TailLines: &tail}); err != nil || got != "panic: lost the database\n" {
		t.Errorf("last line of the previous log = %q, %v", got, err)
	}
	// The container does not run: a followed log ends after its text.
	stream, err := client.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Follow: true}).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if got, err := io.ReadAll(stream); err != nil || string(got) != want {
		t.Errorf("followed log = %q, %v; want %q and its end", got, err, want)
	}
}

// testDeploymentPodFails: a Deployment's Pod with outcome fail ends Failed after run, and its
// ReplicaSet replaces it with a new Pod, which runs and is Ready before it fails in turn.
func testDeploymentPodFails(t *testing.T, client kubernetes.Interface, dir string) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	ns := metav1.NamespaceDefault
	labels := map[string]string{"app": "faller"}
	pods, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "app=faller"})
	if err != nil {
		t.Fatal(err)
	}
	defer pods.Stop()
	one := int32(1)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "faller"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{
					annotationOutcome: "fail", annotationPrefix + "run": "2s",
				}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.invalid/web"}}},
			},
		},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e, err := until(ctx, pods, podCondition(corev1.PodReady, corev1.ConditionTrue))
	if err != nil {
		t.Fatalf("Pod of faller never Ready: %v; logs in %s", err, filepath.Join(dir, "logs"))
	}
	first := e.Object.(*corev1.Pod).UID
	if _, err := until(ctx, pods, func(e watch.Event) (bool, error) {
		p, ok := e.Object.(*corev1.Pod)
		return ok && p.UID == first && p.Status.Phase == corev1.PodFailed, nil
	}); err != nil {
		t.Fatalf("Pod of faller never Failed: %v", err)
	}
	if _, err := until(ctx, pods, func(e watch.Event) (bool, error) {
		p, ok := e.Object.(*corev1.Pod)
		return ok && p.UID != first && condition(p, corev1.PodReady).Status == corev1.ConditionTrue, nil
	}); err != nil {
		t.Fatalf("failed Pod of faller never replaced by a Ready one: %v", err)
	}
}

// checkCrashLooping checks that p's container waits in CrashLoopBackOff after an instance that
// exited with code 3, and returns its restartCount.
func checkCrashLooping(t *testing.T, p *corev1.Pod) int32 {
	t.Helper()
	if len(p.Status.ContainerStatuses) != 1 {
		t.Fatalf("container statuses %+v, want web's", p.Status.ContainerStatuses)
	}
	cs := p.Status.ContainerStatuses[0]
	if cs.Ready || cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" || cs.RestartCount < 1 {
		t.Fatalf("container %s: ready %v, state %+v, restartCount %d; want waiting in CrashLoopBackOff, restarted", cs.Name, cs.Ready, cs.State, cs.RestartCount)
	}
	if term := cs.LastTerminationState.Terminated; term == nil || term.ExitCode != 3 || term.Reason != "Error" {
		t.Fatalf("container %s: last state %+v, want terminated with exit code 3, reason Error", cs.Name, cs.LastTerminationState)
	}
	return cs.RestartCount
}

// testFailAfterRun: a Pod that is not a Job's, with outcome fail, is Ready, then after run ends
// Failed, its container terminated with exit code 1; it has a log but no previous one.
func testFailAfterRun(t *testing.T, client kubernetes.Interface, dir string) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	pods := client.CoreV1().Pods(metav1.NamespaceDefault)
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "quitter").String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "quitter", Annotations: map[string]string{
			annotationOutcome: "fail", annotationPrefix + "run": "2s", annotationLog: "giving up",
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.invalid/quitter"}}},
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := until(ctx, w, podCondition(corev1.PodReady, corev1.ConditionTrue)); err != nil {
		t.Fatalf("Pod quitter never Ready: %v; logs in %s", err, filepath.Join(dir, "logs"))
	}
	e, err := until(ctx, w, func(e watch.Event) (bool, error) {
		p, ok := e.Object.(*corev1.Pod)
		return ok && p.Status.Phase == corev1.PodFailed, nil
	})
	if err != nil {
		t.Fatalf("Pod quitter never Failed: %v", err)
	}
	p := e.Object.(*corev1.Pod)
	if c := condition(p, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Reason != "PodFailed" {
		t.Errorf("Ready = %+v, want False, reason PodFailed", c)
	}
	if cs := p.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 1 ||
		cs[0].State.Terminated.Reason != "Error" || cs[0].RestartCount != 0 {
		t.Errorf("container statuses %+v, want main terminated with exit code 1, reason Error, not restarted", cs)
	}
	if b, err := pods.GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx); err != nil || string(b) != "giving up\n" {
		t.Errorf("log = %q, %v; want the annotation's", b, err)
	}
	if b, err := pods.GetLogs(pod.Name, &corev1.PodLogOptions{Previous: true}).DoRaw(ctx); err == nil {
		t.Errorf("previous log of a container never restarted = %q, want an error", b)
	}
}

// watchCondition is met by an event of a watch.
type watchCondition func(watch.Event) (bool, error)

// until reads the events of w until one meets cond or ctx ends, and returns that event. w stays
// open: the next call goes on with the events that follow.
func until(ctx context.Context, w watch.Interface, cond watchCondition) (*watch.Event, error) {
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				return nil, errors.New("watch closed")
			}
			if e.Type == watch.Error {
				return nil, apierrors.FromObject(e.Object)
			}
			if ok, err := cond(e); ok || err != nil {
				return &e, err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func condition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return &corev1.PodCondition{Type: t, Status: corev1.ConditionUnknown}
}

func podCondition(t corev1.PodConditionType, status corev1.ConditionStatus) watchCondition {
	return func(e watch.Event) (bool, error) {
		p, ok := e.Object.(*corev1.Pod)
		return ok && condition(p, t).Status == status, nil
	}
}

func deploymentAvailable(n int32) watchCondition {
	return func(e watch.Event) (bool, error) {
		d, ok := e.Object.(*appsv1.Deployment)
		return ok && d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == n, nil
	}
}
