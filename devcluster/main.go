// Command berth-devcluster runs a real, local Kubernetes control plane for berth's tests and demo:
// embedded etcd, kube-apiserver, kube-controller-manager, a pod binder and a simulated kubelet
// (kwok). See README.md.
package main

import (
	"fmt"
	"os"
)

const usage = `berth-devcluster runs a local Kubernetes control plane.

Usage:
  berth-devcluster up --dir DIR [flags]   start a cluster in DIR; runs until SIGINT/SIGTERM
  berth-devcluster help                   show this help

Flags of "up":
  --dir DIR                    state, certificates, kubeconfig and logs (required)
  --nodes N                    number of simulated nodes (default 1)
  --audit-log PATH             append one JSON audit event per API request to PATH, at level
                               Metadata, when the response is complete (default: none)
  --job-batch-period DURATION  how long the Job controller batches Pod updates before it syncs
                               a Job (default 1s, as upstream; shorter makes Jobs finish sooner)
  --controller-qps N           the controllers' requests per second (default 20, as upstream;
                               the garbage collector's foreground deletions wait on it)

"up" writes DIR/kubeconfig, logs to DIR/logs/ and prints one line starting with
"devcluster ready" once the API server, the controllers and the nodes are ready.
`

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "berth-devcluster: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("missing command")
	}
	switch args[0] {
	case "up":
		return up(args[1:])
	case "component":
		// Internal: "up" starts each component as a child process of this binary, because
		// the components keep global state (flags, metrics registries, klog).
		if len(args) < 2 {
			return fmt.Errorf("component: missing name")
		}
		return runComponent(args[1], args[2:])
	case "help", "-h", "--help":
		fmt.Print(usage)
		return nil
	default:
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}

func runComponent(name string, args []string) error {
	go watchParent()
	switch name {
	case "etcd":
		return runEtcd(args)
	case "kube-apiserver":
		return runAPIServer(args)
	case "kube-controller-manager":
		return runControllerManager(args)
	case "kubelet":
		return runKubelet(args)
	default:
		return fmt.Errorf("unknown component %q", name)
	}
}
