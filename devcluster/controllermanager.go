package main

import (
	"fmt"

	"k8s.io/component-base/cli"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func controllerManagerArgs(kubeconfig string, p *pki) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--secure-port=0",
		"--leader-elect=false",
		// Every controller that is on by default: garbage collector, job, cronjob, namespace,
		// deployment, replicaset, statefulset, daemonset, endpoint(slice), serviceaccount(-token),
		// ttl-after-finished, pod GC, resource quota, node lifecycle, and the rest.
		"--controllers=*",
		"--service-account-private-key-file=" + p.ServiceAccountKey,
		"--root-ca-file=" + p.CACert,
		"--use-service-account-credentials=false",
		"--allocate-node-cidrs=false",
		"--cluster-cidr=" + podCIDR,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--v=1",
	}
}

func runControllerManager(args []string) error {
	cmd := controllermanager.NewControllerManagerCommand()
	cmd.SetArgs(args)
	if code := cli.Run(cmd); code != 0 {
		return fmt.Errorf("kube-controller-manager exited with code %d", code)
	}
	return nil
}
