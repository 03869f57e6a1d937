package readiness

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		opts Options
		want State
	}{
		{"configmap", `{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}`, Options{}, Ready},
		{"deployment rolling out", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 2}
spec: {replicas: 2}
status: {observedGeneration: 2, replicas: 2, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1}`, Options{}, InProgress},
		{"deployment available", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 2}
spec: {replicas: 2}
status:
  observedGeneration: 2
  replicas: 2
  updatedReplicas: 2
  readyReplicas: 2
  availableReplicas: 2
  conditions: [{type: Available, status: "True"}, {type: Progressing, status: "True", reason: NewReplicaSetAvailable}]`, Options{}, Ready},
		{"deployment old generation", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, generation: 3}
spec: {replicas: 2}
status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2}`, Options{}, InProgress},
		{"job not waited for", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}}`, Options{}, Ready},
		{"job running", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {active: 1}}`, Options{WaitForJobs: true}, InProgress},
		{"job complete", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {conditions: [{type: Complete, status: "True"}]}}`, Options{WaitForJobs: true}, Ready},
		{"job failed", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}, status: {conditions: [{type: Failed, status: "True", reason: BackoffLimitExceeded}]}}`, Options{WaitForJobs: true}, Failed},
		{"pod failed", `{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Failed, reason: Evicted}}`, Options{}, Failed},
		{"pod pending", `{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Pending}}`, Options{}, InProgress},
		{"pod ready", `{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Running, conditions: [{type: Ready, status: "True"}]}}`, Options{}, Ready},
		{"pvc pending", `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, status: {phase: Pending}}`, Options{}, InProgress},
		{"pvc bound", `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: c}, status: {phase: Bound}}`, Options{}, Ready},
		{"crd not established", `{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: shirts.stable.example.com}, status: {conditions: []}}`, Options{}, InProgress},
		{"crd established", `{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: shirts.stable.example.com}, status: {conditions: [{type: Established, status: "True"}, {type: NamesAccepted, status: "True"}]}}`, Options{}, Ready},
		{"custom resource not ready", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, generation: 1}, status: {observedGeneration: 1, conditions: [{type: Ready, status: "False", reason: Waiting}]}}`, Options{}, InProgress},
		{"custom resource ready", `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, generation: 1}, status: {observedGeneration: 1, conditions: [{type: Ready, status: "True"}]}}`, Options{}, Ready},
		{"load balancer service with cluster IP", `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: LoadBalancer, clusterIP: 10.96.0.10}}`, Options{}, Ready},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compute(obj(t, tt.yaml), tt.opts)
			if got.State != tt.want {
				t.Errorf("Compute = %s (%s), want %s", got.State, got.Message, tt.want)
			}
			if got.Message == "" {
				t.Error("empty message")
			}
		})
	}
}
