package main

import (
	"fmt"
	"path/filepath"
	"strconv"

	"k8s.io/component-base/cli"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func apiServerArgs(root string, p *pki, port int, etcdURL string) []string {
	return []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(root, "pki"),
		"--tls-cert-file=" + p.ServingCert,
		"--tls-private-key-file=" + p.ServingKey,
		"--client-ca-file=" + p.CACert,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.ServiceAccountPub,
		"--service-account-signing-key-file=" + p.ServiceAccountKey,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--allow-privileged=true",
		// The simulated nodes' kubelet (its log server) is at their InternalIP, with a certificate
		// of the cluster's CA.
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-certificate-authority=" + p.CACert,
		// The "kubernetes" Service would point at 127.0.0.1, which Endpoints may not hold.
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--v=1",
	}
}

func runAPIServer(args []string) error {
	cmd := apiserver.NewAPIServerCommand()
	cmd.SetArgs(args)
	if code := cli.Run(cmd); code != 0 {
		return fmt.Errorf("kube-apiserver exited with code %d", code)
	}
	return nil
}
