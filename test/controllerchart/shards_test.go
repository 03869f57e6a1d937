package controllerchart

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestTemplateDefaultUnchanged: with no shards listed, helm template renders the chart as it did
// before the chart could shard (testdata/default.yaml; -update rewrites it after a deliberate
// change).
func TestTemplateDefaultUnchanged(t *testing.T) {
	t.Parallel()
	golden := filepath.Join("testdata", "default.yaml")
	for _, args := range [][]string{nil, {"--set", "sharding.shards=null"}} {
		all := append([]string{"template", "ctl", chartDir(t), "-n", "berth-system", "--kube-version", "1.33.0"}, args...)
		out, stderr, err := berthtest.RunHelm(t, all...)
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(all, " "), err, stderr)
		}
		if *update && args == nil {
			if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("helm %s renders other than %s:\n%s", strings.Join(all, " "), golden, out)
		}
	}
}

// TestTemplateShards: two shards render a Deployment each, serving sharding.berth.dev/key=NAME,
// beside the main one serving the Releases of no shard; their Pods are selected apart; the
// leader election Role names each one's Lease as the command names it, and those differ; the
// shards' metrics have a Service; a shard may set its own concurrency, and a bad name is refused.
func TestTemplateShards(t *testing.T) {
	t.Parallel()
	objs := renderChart(t, "--set-json", `sharding.shards=["one",{"name":"two","concurrency":8,"replicas":2}]`)
	selectors := map[string]string{
		"ctl-berth-controller":     "!" + v1alpha1.ShardKeyLabel,
		"ctl-berth-controller-one": v1alpha1.ShardKeyLabel + "=one",
		"ctl-berth-controller-two": v1alpha1.ShardKeyLabel + "=two",
	}
	var deployments []*appsv1.Deployment
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			deployments = append(deployments, find[appsv1.Deployment](t, objs, "Deployment", "berth-system", o.GetName()))
		}
	}
	if len(deployments) != len(selectors) {
		t.Fatalf("the chart renders %d Deployments, want %d", len(deployments), len(selectors))
	}
	role := find[rbacv1.Role](t, objs, "Role", "berth-system", "ctl-berth-controller-leader-election")
	leases := map[string]bool{}
	for _, d := range deployments {
		sel, ok := selectors[d.Name]
		if !ok {
			t.Errorf("the chart renders Deployment %s, of no shard", d.Name)
			continue
		}
		args := d.Spec.Template.Spec.Containers[0].Args
		if !slices.Contains(args, "--watch-label-selector="+sel) {
			t.Errorf("Deployment %s runs %q, want --watch-label-selector=%s", d.Name, args, sel)
		}
		shard, err := controller.ParseShard(sel)
		if err != nil {
			t.Fatal(err)
		}
		leases[shard.LeaseName()] = true
		for _, verb := range []string{"get", "update"} {
			if !allows(role.Rules, need{"coordination.k8s.io", "leases", verb, shard.LeaseName()}) {
				t.Errorf("the leader election Role does not allow %s of Lease %s (shard %s)", verb, shard.LeaseName(), sel)
			}
		}
		// No Deployment selects another's Pods.
		for _, other := range deployments {
			s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
			if err != nil {
				t.Fatal(err)
			}
			if other != d && s.Matches(labels.Set(other.Spec.Template.Labels)) {
				t.Errorf("Deployment %s selects the Pods of %s", d.Name, other.Name)
			}
		}
	}
	if len(leases) != len(selectors) {
		t.Errorf("the shards share leader election Leases: %v", leases)
	}
	if allows(role.Rules, need{"coordination.k8s.io", "leases", "update", controller.Name + ".berth.dev"}) {
		t.Error("with shards, the leader election Role still allows the Lease of an unsharded controller")
	}
	two := find[appsv1.Deployment](t, objs, "Deployment", "berth-system", "ctl-berth-controller-two")
	if args := two.Spec.Template.Spec.Containers[0].Args; *two.Spec.Replicas != 2 || !slices.Contains(args, "--concurrency=8") {
		t.Errorf("shard two runs %d replicas with %q, want 2 with --concurrency=8", *two.Spec.Replicas, args)
	}
	svc := find[corev1.Service](t, objs, "Service", "berth-system", "ctl-berth-controller-shards-metrics")
	for _, d := range deployments {
		shardPod := d.Name != "ctl-berth-controller"
		if got := labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)); got != shardPod {
			t.Errorf("the shards' metrics Service selects the Pods of %s: %v, want %v", d.Name, got, shardPod)
		}
	}

	for _, bad := range []string{"One", "a_b", "one,one"} {
		_, stderr, err := berthtest.RunBerth(t, "template", "ctl", chartDir(t), "--kube-version", "1.33.0", "--set", "sharding.shards={"+bad+"}")
		if err == nil || !strings.Contains(stderr+err.Error(), "sharding.shards") {
			t.Errorf("sharding.shards={%s}: %v, want it refused, naming sharding.shards", bad, err)
		}
	}
}

// TestChartShardsRun installs the chart with a shard, and runs its main and shard controllers
// with their Deployments' arguments as the chart's ServiceAccount: each holds its own leader
// election Lease, which the chart's rights let it mark with what it serves.
func TestChartShardsRun(t *testing.T) {
	env := testenv.New(t)
	apps := testenv.New(t)
	name := "ctl-" + berthtest.Suffix(env)
	full := name + "-berth-controller"
	berthtest.MustBerth(t, env, "install", name, chartDir(t), "--set", "sharding.shards={one}",
		"--set", "watchNamespace="+apps.Namespace, "--wait", "--timeout", "2m")
	waitForCRD(t, env)
	for deployment, sel := range map[string]string{full: "!" + v1alpha1.ShardKeyLabel, full + "-one": v1alpha1.ShardKeyLabel + "=one"} {
		runChartController(t, env, waitForDeployment(t, env, deployment))
		shard, err := controller.ParseShard(sel)
		if err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "Lease "+shard.LeaseName()+" says it serves "+sel, func(ctx context.Context) (bool, error) {
			l, err := env.Client.CoordinationV1().Leases(env.Namespace).Get(ctx, shard.LeaseName(), metav1.GetOptions{})
			if err != nil {
				return false, client.IgnoreNotFound(err)
			}
			return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" &&
				l.Annotations[v1alpha1.WatchLabelSelectorAnnotation] == sel &&
				l.Annotations[v1alpha1.WatchNamespaceAnnotation] == apps.Namespace, nil
		})
	}
}
