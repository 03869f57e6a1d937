package main

import (
	"bufio"
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestLogText(t *testing.T) {
	tests := []struct {
		text, tail, limit, want string
	}{
		{"", "", "", ""},
		{"one", "", "", "one\n"},
		{"one\ntwo\n", "", "", "one\ntwo\n"},
		{"one\ntwo\nthree", "2", "", "two\nthree\n"},
		{"one\ntwo", "0", "", ""},
		{"one\ntwo", "5", "", "one\ntwo\n"},
		{"one\ntwo", "", "5", "one\nt"},
		{"one\ntwo\nthree", "2", "4", "two\n"},
	}
	for _, tt := range tests {
		if got := logText(tt.text, tt.tail, tt.limit); got != tt.want {
			t.Errorf("logText(%q, tail %q, limit %q) = %q, want %q", tt.text, tt.tail, tt.limit, got, tt.want)
		}
	}
}

// TestContainerLogs reads a simulated container's log through the API server, as kubectl logs
// does: its Pod's devcluster.berth.dev/log annotation, once it runs; followed, the stream stays
// open while the container runs and ends when its Pod is gone.
func TestContainerLogs(t *testing.T) {
	_, dir := startUp(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	pods := client.CoreV1().Pods(metav1.NamespaceDefault)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "talker", Annotations: map[string]string{
			annotationLog: "starting\nmigrated 3 tables", annotationOutcome: "hang",
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.invalid/talker"}}},
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && started(p, "main"), nil
	})
	if err != nil {
		t.Fatalf("Pod talker never ran: %v; logs in %s", err, filepath.Join(dir, "logs"))
	}

	data, err := pods.GetLogs(pod.Name, &corev1.PodLogOptions{Container: "main"}).DoRaw(ctx)
	if err != nil || string(data) != "starting\nmigrated 3 tables\n" {
		t.Fatalf("log = %q, %v; want the annotation's two lines", data, err)
	}
	tail := int64(1)
	if data, err := pods.GetLogs(pod.Name, &corev1.PodLogOptions{TailLines: &tail}).DoRaw(ctx); err != nil || string(data) != "migrated 3 tables\n" {
		t.Errorf("last line of the log = %q, %v; want the annotation's last line", data, err)
	}
	if _, err := pods.GetLogs(pod.Name, &corev1.PodLogOptions{Container: "nope"}).DoRaw(ctx); err == nil {
		t.Error("log of a container the Pod does not have: no error")
	}

	stream, err := pods.GetLogs(pod.Name, &corev1.PodLogOptions{Follow: true}).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	r := bufio.NewReader(stream)
	for _, want := range []string{"starting\n", "migrated 3 tables\n"} {
		if line, err := r.ReadString('\n'); line != want {
			t.Fatalf("followed log line %q, %v; want %q", line, err, want)
		}
	}
	// The container still runs: the stream is open until the Pod is gone.
	if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
		t.Errorf("followed log after the Pod was deleted: %q, %v; want its end", rest, err)
	}
}
