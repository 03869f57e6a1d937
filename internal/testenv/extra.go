package testenv

import (
	"context"
	"os"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Cluster is a devcluster of one test's own, beside the package's: another cluster for the test
// to act on (a workload cluster that a controller in the package's cluster releases into).
type Cluster struct {
	// Kubeconfig is the path of its admin kubeconfig (which names certificate files).
	Kubeconfig string

	c        *cluster
	stopOnce sync.Once
	stopErr  error
}

// NewCluster starts a devcluster for the test and stops it when the test ends. Starting one
// takes a while: use it only where a second cluster is the point of the test.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	bin, err := EnsureDevcluster()
	if err != nil {
		t.Fatalf("testenv.NewCluster: %v", err)
	}
	dir, err := os.MkdirTemp("", "berth-devcluster-")
	if err != nil {
		t.Fatalf("testenv.NewCluster: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), readyTimeout)
	c, err := startCluster(ctx, bin, dir)
	cancel()
	if err != nil {
		t.Fatalf("testenv.NewCluster: %v\n%s", err, logTails(dir))
	}
	out := &Cluster{Kubeconfig: c.kubeconfig, c: c}
	t.Cleanup(func() {
		if err := out.stop(); err != nil {
			t.Errorf("testenv: %v\n%s", err, logTails(dir))
		}
		if t.Failed() {
			t.Logf("testenv: devcluster state and logs kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return out
}

// Stop stops the cluster now: its API server no longer answers. The test goes on.
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	if err := c.stop(); err != nil {
		t.Errorf("testenv: %v", err)
	}
}

func (c *Cluster) stop() error {
	c.stopOnce.Do(func() { c.stopErr = c.c.stop(stopGrace) })
	return c.stopErr
}

// stopped says Stop was called.
func (c *Cluster) stopped() bool {
	select {
	case <-c.c.exited:
		return true
	default:
		return false
	}
}

// New creates the namespace name in the cluster (the name of a namespace of the package's
// cluster, say, to mirror it), waits until it can hold Pods, and returns the test's view of it.
// The namespace is deleted when the test ends, unless the cluster was stopped.
func (c *Cluster) New(t testing.TB, name string) *Env {
	t.Helper()
	env, err := newEnv(c.c)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{testAnnotation: t.Name()}}}
	if _, err := env.Client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("testenv: create namespace %s: %v", name, err)
	}
	env.Namespace = name
	t.Cleanup(func() {
		if !c.stopped() {
			env.cleanup(t)
		}
	})
	if err := env.waitForServiceAccount(t.Context()); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return env
}

// KubeconfigData is the cluster's admin kubeconfig with the certificates in it (the -data
// fields) instead of paths of files, as a kubeconfig kept in a Secret has them.
func (c *Cluster) KubeconfigData(t testing.TB) []byte {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		t.Fatalf("testenv: embed the certificates of %s: %v", c.Kubeconfig, err)
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return data
}
