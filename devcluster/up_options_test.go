package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// auditEvent holds the fields of an audit.k8s.io/v1 Event the tests look at.
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp string `json:"requestReceivedTimestamp"`
	StageTimestamp           string `json:"stageTimestamp"`
}

// readAuditLog parses every complete line of the audit log at path.
func readAuditLog(t *testing.T, path string) []auditEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit log line %q: %v", sc.Text(), err)
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

func TestUpAuditLogAndJobBatchPeriod(t *testing.T) {
	const userAgent = "devcluster-audit-test"
	auditLog := filepath.Join(t.TempDir(), "audit", "audit.log")
	_, dir := startUp(t, "--audit-log", auditLog, "--job-batch-period=50ms", "--controller-qps=200")
	if _, err := os.Stat(filepath.Join(dir, "audit-policy.yaml")); err != nil {
		t.Errorf("audit policy: %v", err)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.UserAgent = userAgent
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "audited"}}
	if _, err := client.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var found *auditEvent
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		for _, e := range readAuditLog(t, auditLog) {
			if e.UserAgent == userAgent && e.Verb == "create" && e.ObjectRef != nil &&
				e.ObjectRef.Resource == "configmaps" && e.ObjectRef.Name == "audited" {
				found = &e
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no audit event for the ConfigMap create in %s: %v", auditLog, err)
	}
	if found.Stage != "ResponseComplete" || found.ObjectRef.Namespace != metav1.NamespaceDefault ||
		found.ResponseStatus == nil || found.ResponseStatus.Code != 201 ||
		found.RequestReceivedTimestamp == "" || found.StageTimestamp == "" {
		t.Errorf("audit event for the create = %+v, want stage ResponseComplete, namespace default, code 201 and both timestamps", *found)
	}
	for _, e := range readAuditLog(t, auditLog) {
		if e.Stage != "ResponseComplete" && e.Stage != "Panic" {
			t.Errorf("audit event in stage %s, want only ResponseComplete or Panic: %+v", e.Stage, e)
			break
		}
	}

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "quick"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"devcluster.berth.dev/run": "0s"}},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "example.invalid/hook"}},
			},
		}},
	}
	if _, err := client.BatchV1().Jobs(metav1.NamespaceDefault).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		j, err := client.BatchV1().Jobs(metav1.NamespaceDefault).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("Job/default/quick did not complete: %v; logs in %s", err, filepath.Join(dir, "logs"))
	}
}
