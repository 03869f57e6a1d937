package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The kinds of fleet runs: the Releases split among shards, or released into a second cluster.
const fleetShards, fleetRemote = "shards", "remote"

// shardKey is the label that puts a Release in a shard, as the chart's shards select it.
const shardKey = "sharding.berth.dev/key"

// remoteSecret is the Secret, in every tenant namespace of a remote run, that holds the
// workload cluster's kubeconfig under the key "value" (spec.kubeConfig's default).
const remoteSecret = "workload-kubeconfig"

// fleetRun is what one fleet run measured: several controllers (shards) sharing the Releases of
// one cluster, or one controller releasing into a second cluster.
type fleetRun struct {
	Kind          string `json:"kind"`
	Releases      int    `json:"releases"`
	Concurrency   int    `json:"concurrency"`
	ControllerQPS int    `json:"controller_qps"`
	Interval      string `json:"interval,omitempty"`
	// CreateSeconds and ReadySeconds are as a controllerRun's.
	CreateSeconds float64 `json:"create_seconds"`
	ReadySeconds  float64 `json:"ready_seconds"`
	LoadAverage   float64 `json:"load_average"`
	// ClusterCPUSecondsReady is the CPU time the cluster's components used from the first
	// create until Ready, those of both clusters in a remote run (0 in results from before it
	// was measured).
	ClusterCPUSecondsReady float64 `json:"cluster_cpu_seconds_ready,omitempty"`
	// Controllers are the controller processes, a shard each or the one of a remote run.
	Controllers []fleetController `json:"controllers"`
	// Requests is every controller's requests until Ready to the management cluster (the one
	// holding the Releases); RemoteRequests those to the workload cluster of a remote run.
	Requests       int `json:"requests"`
	RemoteRequests int `json:"remote_requests,omitempty"`
	ChartRequests  int `json:"chart_requests"`
	// DeleteSeconds is from the first delete until every Release is gone; DeleteRequests the
	// controllers' requests meanwhile, in both clusters.
	DeleteSeconds  float64 `json:"delete_seconds"`
	DeleteRequests int     `json:"delete_requests"`
	// DeleteSkipped says the deletion was not measured (--delete=false).
	DeleteSkipped bool   `json:"delete_skipped,omitempty"`
	Error         string `json:"error,omitempty"`
}

// fleetController is one controller process of a fleet run.
type fleetController struct {
	Name string `json:"name"`
	// Selector is its --watch-label-selector ("" for none); Releases how many it was given.
	Selector          string  `json:"selector,omitempty"`
	Releases          int     `json:"releases"`
	PeakRSSReadyBytes int64   `json:"peak_rss_ready_bytes"`
	PeakRSSBytes      int64   `json:"peak_rss_bytes"`
	CPUSecondsReady   float64 `json:"cpu_seconds_ready"`
}

// shardName is the shard of the i-th Release of n shards: shard1 … shardN, round-robin.
func shardName(i, shards int) string { return fmt.Sprintf("shard%d", i%shards+1) }

// shardSelector is the --watch-label-selector of the shard name.
func shardSelector(name string) string { return shardKey + "=" + name }

// shardCounts is how many of n Releases each of the shards gets, round-robin.
func shardCounts(n, shards int) []int {
	out := make([]int, shards)
	for i := range n {
		out[i%shards]++
	}
	return out
}

// fleet sets what opts asks of the i-th Release obj: its shard's label, or its kubeconfig
// Secret. A remote Release names no ServiceAccount: it acts as the kubeconfig's own identity
// (the workload cluster's admin), and its Secret is read in the management cluster as the
// controller's --default-service-account.
func (opts releaseOptions) fleet(obj *unstructured.Unstructured, i int) {
	if opts.shards > 0 {
		obj.SetLabels(map[string]string{shardKey: shardName(i, opts.shards)})
	}
	if opts.kubeConfigSecret != "" {
		spec := obj.Object["spec"].(map[string]any)
		delete(spec, "serviceAccountName")
		spec["kubeConfig"] = map[string]any{"secretRef": map[string]any{"name": opts.kubeConfigSecret}}
	}
}

// fleetCluster is a devcluster of a fleet run and the harness's clients of it.
type fleetCluster struct {
	*devcluster
	client kubernetes.Interface
	dyn    dynamic.Interface
}

// startFleetCluster starts a devcluster in dir and creates n tenant namespaces in it.
func startFleetCluster(ctx context.Context, cfg controllerConfig, what string, n, qps int, dir string) (*fleetCluster, error) {
	cs := clusterSettings{Cases: []string{what}, JobBatchPeriod: upstreamJobBatchPeriod.String(), ControllerQPS: qps}
	fmt.Printf("starting devcluster in %s: %s\n", dir, cs.describe())
	d, err := startCluster(ctx, config{devcluster: cfg.devcluster}, cs, dir)
	if err != nil {
		return nil, err
	}
	fc := &fleetCluster{devcluster: d}
	rc, err := clientcmd.BuildConfigFromFlags("", d.kubeconfig)
	if err == nil {
		rc.UserAgent = harnessUserAgent
		rc.QPS, rc.Burst = 2000, 4000
		fc.client, err = kubernetes.NewForConfig(rc)
	}
	if err == nil {
		fc.dyn, err = dynamic.NewForConfig(rc)
	}
	if err == nil {
		fmt.Printf("creating %d namespaces, each with a ServiceAccount allowed everything in it\n", n)
		err = createTenants(ctx, fc.client, tenantPrefix, n)
	}
	if err != nil {
		d.stop()
		return nil, err
	}
	return fc, nil
}

// selfContainedKubeconfig is the kubeconfig at path with its certificates in it instead of
// names of files, as a kubeconfig kept in a Secret must have them.
func selfContainedKubeconfig(path string) ([]byte, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, err
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, fmt.Errorf("embed the certificates of %s: %w", path, err)
	}
	return clientcmd.Write(*cfg)
}

// createKubeconfigSecrets creates the Secret remoteSecret, holding kubeconfig, in each of the n
// tenant namespaces.
func createKubeconfigSecrets(ctx context.Context, client kubernetes.Interface, n int, kubeconfig []byte) error {
	return parallel(ctx, n, 32, func(ctx context.Context, i int) error {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: remoteSecret, Namespace: tenant(i)}, Data: map[string][]byte{"value": kubeconfig}}
		if _, err := client.CoreV1().Secrets(tenant(i)).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create Secret %s/%s: %w", tenant(i), remoteSecret, err)
		}
		return nil
	})
}

// runShards measures n Releases split round-robin among cfg.shards controllers, each watching
// its own shard's label, on a devcluster of its own.
func runShards(ctx context.Context, cfg controllerConfig, n, qps int, dir string) (fleetRun, error) {
	run := fleetRun{Kind: fleetShards, Releases: n, Concurrency: cfg.concurrency, ControllerQPS: qps, Interval: cfg.interval}
	mgmt, err := startFleetCluster(ctx, cfg, fmt.Sprintf("controller (%d Releases, %d shards)", n, cfg.shards), n, qps, dir)
	if err != nil {
		return run, err
	}
	defer mgmt.stop()
	repo, err := prepareFleet(ctx, cfg, mgmt, dir)
	if err != nil {
		return run, err
	}
	defer repo.close()
	counts := shardCounts(n, cfg.shards)
	var ctls []*controllerProcess
	defer func() {
		for _, c := range ctls {
			c.kill()
		}
	}()
	for s := range cfg.shards {
		name := shardName(s, cfg.shards)
		c, err := startNamedController(ctx, cfg, mgmt.kubeconfig, dir, name, []string{"--watch-label-selector", shardSelector(name)})
		if err != nil {
			return run, err
		}
		ctls = append(ctls, c)
		run.Controllers = append(run.Controllers, fleetController{Name: name, Selector: shardSelector(name), Releases: counts[s]})
	}
	opts := releaseOptions{chart: cfg.chart, interval: cfg.interval, shards: cfg.shards}
	return run, measureFleet(ctx, cfg, &run, fleetSetup{mgmt: mgmt, repo: repo}, ctls, opts)
}

// runRemote measures n Releases in one devcluster, each with a kubeconfig Secret of a second
// devcluster, the workload cluster, that one controller releases them into.
func runRemote(ctx context.Context, cfg controllerConfig, n, qps int, dir string) (fleetRun, error) {
	run := fleetRun{Kind: fleetRemote, Releases: n, Concurrency: cfg.concurrency, ControllerQPS: qps, Interval: cfg.interval}
	mgmt, err := startFleetCluster(ctx, cfg, fmt.Sprintf("controller (%d Releases into a workload cluster)", n), n, qps, filepath.Join(dir, "management"))
	if err != nil {
		return run, err
	}
	defer mgmt.stop()
	// The workload cluster gets the same namespaces: a release goes into its Release's namespace.
	workload, err := startFleetCluster(ctx, cfg, fmt.Sprintf("workload cluster of %d Releases", n), n, qps, filepath.Join(dir, "workload"))
	if err != nil {
		return run, err
	}
	defer workload.stop()
	repo, err := prepareFleet(ctx, cfg, mgmt, dir)
	if err != nil {
		return run, err
	}
	defer repo.close()
	kc, err := selfContainedKubeconfig(workload.kubeconfig)
	if err != nil {
		return run, err
	}
	if err := createKubeconfigSecrets(ctx, mgmt.client, n, kc); err != nil {
		return run, err
	}
	// The Releases name no account: the deployer of their namespace reads the kubeconfig Secret.
	c, err := startNamedController(ctx, cfg, mgmt.kubeconfig, dir, "controller", []string{"--default-service-account", deployer})
	if err != nil {
		return run, err
	}
	defer c.kill()
	run.Controllers = []fleetController{{Name: "controller", Releases: n}}
	opts := releaseOptions{chart: cfg.chart, interval: cfg.interval, kubeConfigSecret: remoteSecret}
	return run, measureFleet(ctx, cfg, &run, fleetSetup{mgmt: mgmt, workload: workload, repo: repo}, []*controllerProcess{c}, opts)
}

// checkFleetFlags checks the fleet flags' values.
func checkFleetFlags(cfg controllerConfig) error {
	if cfg.shards < 0 {
		return fmt.Errorf("--shards must not be negative, got %d", cfg.shards)
	}
	if cfg.remote < 0 {
		return fmt.Errorf("--remote must not be negative, got %d", cfg.remote)
	}
	if cfg.name == "" || filepath.Base(cfg.name) != cfg.name {
		return fmt.Errorf("--name: want a file name without a directory, got %q", cfg.name)
	}
	return nil
}

// addFleet records a fleet run, failed or not; only an interruption stops the runs.
func (r *controllerResults) addFleet(run fleetRun, err error) error {
	if err != nil {
		run.Error = err.Error()
		fmt.Printf("FAILED: %v\n", err)
	}
	r.Fleet = append(r.Fleet, run)
	if errors.Is(err, errInterrupted) {
		return errInterrupted
	}
	return nil
}
