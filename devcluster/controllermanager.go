package main

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/component-base/cli"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/pkg/controller/job"
)

// jobBatchPeriodArg, when it is the first argument of the kube-controller-manager component,
// sets how long the Job controller batches Pod updates before it syncs a Job. Upstream has
// no flag for it, so the component removes it before the rest reaches the command.
const jobBatchPeriodArg = "--devcluster-job-batch-period="

// defaultControllerQPS is the upstream default of --kube-api-qps; the burst is 1.5 times it, as upstream's
// 20 and 30.
const defaultControllerQPS = 20

func controllerManagerArgs(kubeconfig string, p *pki, jobBatchPeriod time.Duration, qps int) []string {
	return []string{
		jobBatchPeriodArg + jobBatchPeriod.String(),
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
		// The controllers' own client-side rate limit; the garbage collector's foreground deletions
		// go through it (two requests an object).
		fmt.Sprintf("--kube-api-qps=%d", qps),
		fmt.Sprintf("--kube-api-burst=%d", qps*3/2),
		"--v=1",
	}
}

// splitJobBatchPeriod removes a leading jobBatchPeriodArg from args and returns its value, or
// 0 when args do not start with it.
func splitJobBatchPeriod(args []string) (time.Duration, []string, error) {
	if len(args) == 0 || !strings.HasPrefix(args[0], jobBatchPeriodArg) {
		return 0, args, nil
	}
	value := strings.TrimPrefix(args[0], jobBatchPeriodArg)
	d, err := time.ParseDuration(value)
	if err != nil {
		return 0, nil, fmt.Errorf("job batch period: %w", err)
	}
	if d <= 0 {
		return 0, nil, fmt.Errorf("job batch period must be greater than 0, got %s", value)
	}
	return d, args[1:], nil
}

func runControllerManager(args []string) error {
	period, args, err := splitJobBatchPeriod(args)
	if err != nil {
		return fmt.Errorf("kube-controller-manager: %w", err)
	}
	if period > 0 {
		// The Job controller reads this package variable; this process runs nothing else.
		job.SyncJobBatchPeriod = period
	}
	cmd := controllermanager.NewControllerManagerCommand()
	cmd.SetArgs(args)
	if code := cli.Run(cmd); code != 0 {
		return fmt.Errorf("kube-controller-manager exited with code %d", code)
	}
	return nil
}
