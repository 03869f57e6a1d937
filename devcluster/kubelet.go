package main

import (
	"context"
	"embed"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"os/signal"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	"sigs.k8s.io/kwok/pkg/client/clientset/versioned"
	"sigs.k8s.io/kwok/pkg/kwok/controllers"
	"sigs.k8s.io/kwok/pkg/utils/client"
	"sigs.k8s.io/kwok/pkg/utils/gotpl"
	"sigs.k8s.io/yaml"
)

// stageFiles are the Pod stages: how the simulated kubelet moves a Pod through its life.
//
//go:embed stages/*.yaml
var stageFiles embed.FS

// kwokNodeAnnotation marks the nodes the simulated kubelet manages.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// runKubelet runs the simulated nodes: kwok's controllers with devcluster's stages, and a binder
// that assigns pending Pods to nodes as a scheduler would.
func runKubelet(args []string) error {
	flags := flag.NewFlagSet("kubelet", flag.ContinueOnError)
	kubeconfig := flags.String("kubeconfig", "", "kubeconfig of the cluster")
	nodeCount := flags.Int("nodes", 1, "number of simulated nodes")
	certFile := flags.String("tls-cert-file", "", "serving certificate of the kubelet port (container logs)")
	keyFile := flags.String("tls-private-key-file", "", "key of --tls-cert-file")
	if err := flags.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	cs, err := client.NewClientset("", *kubeconfig)
	if err != nil {
		return err
	}
	cfg, err := cs.ToRESTConfig()
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	typed, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}

	logPort, err := serveLogs(ctx, typed, *certFile, *keyFile)
	if err != nil {
		return fmt.Errorf("serve container logs: %w", err)
	}
	var nodes []string
	for i := 1; i <= *nodeCount; i++ {
		name := fmt.Sprintf("devcluster-node-%d", i)
		if err := registerNode(ctx, typed, name, logPort); err != nil {
			return fmt.Errorf("register node %s: %w", name, err)
		}
		nodes = append(nodes, name)
	}

	stages, err := loadStages()
	if err != nil {
		return err
	}
	guarded := rest.CopyConfig(cfg)
	guarded.Wrap(func(rt http.RoundTripper) http.RoundTripper { return podDeleteGuard{base: rt} })
	kwokTyped, err := kubernetes.NewForConfig(guarded)
	if err != nil {
		return err
	}
	ctr, err := newKwok(cs, cfg, typed, kwokTyped, stages)
	if err != nil {
		return err
	}
	if err := ctr.Start(ctx); err != nil {
		return fmt.Errorf("start simulated kubelet: %w", err)
	}
	go runBinder(ctx, typed, nodes)
	<-ctx.Done()
	return nil
}

func newKwok(cs client.Clientset, cfg *rest.Config, typed, kwokTyped kubernetes.Interface, stages map[internalversion.StageResourceRef][]*internalversion.Stage) (*controllers.Controller, error) {
	dyn, err := cs.ToDynamicClient()
	if err != nil {
		return nil, err
	}
	mapper, err := cs.ToRESTMapper()
	if err != nil {
		return nil, err
	}
	restClient, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, err
	}
	kwokClient, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	id, err := controllers.Identity()
	if err != nil {
		return nil, err
	}
	o := &outcomes{client: typed}
	return controllers.NewController(controllers.Config{
		Clock:                             clock.RealClock{},
		DynamicClient:                     dyn,
		RESTClient:                        restClient,
		RESTMapper:                        mapper,
		ImpersonatingDynamicClient:        cs.ToImpersonatingDynamicClient(),
		ImpersonatingTypedClient:          cs.ToImpersonatingTypedClient(),
		TypedClient:                       kwokTyped,
		TypedKwokClient:                   kwokClient,
		ManageNodesWithAnnotationSelector: kwokNodeAnnotation + "=fake",
		CIDR:                              podCIDR,
		// The nodes' addresses and kubelet port are registerNode's; kwok's node stage keeps them.
		NodeIP:                    nodeIP,
		PodPlayStageParallelism:   16,
		NodePlayStageParallelism:  4,
		NodeLeaseDurationSeconds:  40,
		NodeLeaseParallelism:      4,
		PodsOnNodeSyncParallelism: 4,
		LocalStages:               stages,
		ID:                        id,
		FuncMap:                   gotpl.FuncMap{"Outcome": o.compute},
	})
}

// nodeIP is every simulated node's InternalIP: the API server reaches the node's kubelet port
// (the log server) there.
const nodeIP = "127.0.0.1"

// registerNode creates the node name, or takes it over from an earlier run of this cluster, with
// kubeletPort as its kubelet's port.
func registerNode(ctx context.Context, c kubernetes.Interface, name string, kubeletPort int) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("1000"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	_, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// The kubelet's port is new with each run of this process, and kwok initializes a node only
	// once (until it is Ready): the addresses and port are set here, at every start.
	patch := fmt.Sprintf(`{"status":{"addresses":[{"type":"InternalIP","address":%q},{"type":"Hostname","address":%q}],"daemonEndpoints":{"kubeletEndpoint":{"Port":%d}}}}`,
		nodeIP, name, kubeletPort)
	_, err = c.CoreV1().Nodes().PatchStatus(ctx, name, []byte(patch))
	return err
}

// loadStages returns devcluster's Pod stages and kwok's own Node stages, grouped by resource.
func loadStages() (map[internalversion.StageResourceRef][]*internalversion.Stage, error) {
	docs := []string{nodefast.DefaultNodeInit, nodeheartbeat.DefaultNodeHeartbeatWithLease}
	files, err := fs.Glob(stageFiles, "stages/*.yaml")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		b, err := stageFiles.ReadFile(f)
		if err != nil {
			return nil, err
		}
		docs = append(docs, string(b))
	}
	out := map[internalversion.StageResourceRef][]*internalversion.Stage{}
	for _, doc := range docs {
		var s v1alpha1.Stage
		if err := yaml.UnmarshalStrict([]byte(doc), &s); err != nil {
			return nil, fmt.Errorf("stage: %w", err)
		}
		in, err := internalversion.ConvertToInternalStage(&s)
		if err != nil {
			return nil, fmt.Errorf("stage %s: %w", s.Name, err)
		}
		out[in.Spec.ResourceRef] = append(out[in.Spec.ResourceRef], in)
	}
	return out, nil
}
