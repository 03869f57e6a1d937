package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Address ranges the cluster allocates from. No traffic is ever sent to them: Services and Pods
// are simulated.
const (
	serviceCIDR = "10.96.0.0/16"
	serviceIP   = "10.96.0.1"
	podCIDR     = "10.244.0.0/16"
)

// readyTimeout bounds how long "up" waits for the whole cluster.
const readyTimeout = 3 * time.Minute

func up(args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory for the cluster's state, certificates, kubeconfig and logs (required)")
	nodes := fs.Int("nodes", 1, "number of simulated nodes")
	auditLog := fs.String("audit-log", "", "append an audit event per API request to this file, one JSON line each (default: no audit log)")
	jobBatchPeriod := fs.Duration("job-batch-period", time.Second, "how long the Job controller batches Pod updates before it syncs a Job")
	controllerQPS := fs.Int("controller-qps", defaultControllerQPS, "requests per second the controllers may make (kube-controller-manager --kube-api-qps; burst 1.5 times it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("up: --dir is required")
	}
	if *nodes < 1 {
		return fmt.Errorf("up: --nodes must be at least 1, got %d", *nodes)
	}
	if *controllerQPS < 1 {
		return fmt.Errorf("up: --controller-qps must be at least 1, got %d", *controllerQPS)
	}
	if *jobBatchPeriod <= 0 {
		return fmt.Errorf("up: --job-batch-period must be greater than 0, got %s", *jobBatchPeriod)
	}
	root, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	logs := filepath.Join(root, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return fmt.Errorf("up: %w", err)
	}
	auditFlags, err := auditOption(root, *auditLog)
	if err != nil {
		return fmt.Errorf("up: --audit-log: %w", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	p, err := generatePKI(filepath.Join(root, "pki"))
	if err != nil {
		return fmt.Errorf("up: certificates: %w", err)
	}
	ports, err := freePorts(3)
	if err != nil {
		return fmt.Errorf("up: pick ports: %w", err)
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	server := "https://127.0.0.1:" + strconv.Itoa(ports[2])
	kubeconfig := filepath.Join(root, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, server, p); err != nil {
		return fmt.Errorf("up: %w", err)
	}

	s := &supervisor{logs: logs}
	defer s.stopAll()

	if err := s.start("etcd", "--data-dir", filepath.Join(root, "etcd"),
		"--client-url", etcdURL, "--peer-url", peerURL); err != nil {
		return err
	}
	if err := s.wait(ctx, readyTimeout, "etcd", func(ctx context.Context) error { return etcdHealthy(ctx, etcdURL) }); err != nil {
		return err
	}
	if err := s.start("kube-apiserver", append(apiServerArgs(root, p, ports[2], etcdURL), auditFlags...)...); err != nil {
		return err
	}
	c, err := newReadiness(kubeconfig)
	if err != nil {
		return fmt.Errorf("up: %w", err)
	}
	if err := s.wait(ctx, readyTimeout, "kube-apiserver", c.apiServerReady); err != nil {
		return err
	}
	if err := s.start("kube-controller-manager", controllerManagerArgs(kubeconfig, p, *jobBatchPeriod, *controllerQPS)...); err != nil {
		return err
	}
	if err := s.start("kubelet", "--kubeconfig", kubeconfig, "--nodes", strconv.Itoa(*nodes),
		"--tls-cert-file", p.KubeletCert, "--tls-private-key-file", p.KubeletKey); err != nil {
		return err
	}
	if err := s.wait(ctx, readyTimeout, "nodes", func(ctx context.Context) error { return c.nodesReady(ctx, *nodes) }); err != nil {
		return err
	}
	if err := s.wait(ctx, readyTimeout, "kube-controller-manager", c.controllersReady); err != nil {
		return err
	}
	fmt.Printf("devcluster ready: kubeconfig=%s server=%s\n", kubeconfig, server)

	select {
	case <-ctx.Done():
		return nil
	case name := <-s.exited:
		return fmt.Errorf("%s exited unexpectedly; see %s", name, filepath.Join(logs, name+".log"))
	}
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func writeKubeconfig(path, server string, p *pki) error {
	content := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: devcluster
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: devcluster
  context:
    cluster: devcluster
    user: admin
current-context: devcluster
`, server, p.CACert, p.AdminCert, p.AdminKey)
	return os.WriteFile(path, []byte(content), 0o600)
}
