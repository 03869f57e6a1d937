package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// readiness answers whether each part of the cluster is up, as a client sees it.
type readiness struct {
	client kubernetes.Interface
}

func newReadiness(kubeconfig string) (*readiness, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &readiness{client: client}, nil
}

func etcdHealthy(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var h struct {
		Health string `json:"health"`
	}
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &h); err != nil || h.Health != "true" {
		return fmt.Errorf("etcd health: %s", body)
	}
	return nil
}

func (r *readiness) apiServerReady(ctx context.Context) error {
	body, err := r.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("readyz: %w: %s", err, body)
	}
	return nil
}

func (r *readiness) nodesReady(ctx context.Context, want int) error {
	nodes, err := r.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	ready := 0
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	if ready < want {
		return fmt.Errorf("%d of %d nodes ready", ready, want)
	}
	return nil
}

// controllersReady reports whether kube-controller-manager is doing its work: the service
// account controller creates "default" in every namespace, and pods cannot be admitted before.
func (r *readiness) controllersReady(ctx context.Context) error {
	_, err := r.client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
	return err
}
