package controllerchart

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/test/berthtest"
)

// need is a request the controller makes with its own rights.
type need struct {
	group, resource, verb, name string
}

// releaseNeeds are the requests the controller makes on Releases' namespaces: every other call
// for a release is made as the Release's ServiceAccount.
var releaseNeeds = []need{
	{"berth.dev", "releases", "get", ""}, {"berth.dev", "releases", "list", ""},
	{"berth.dev", "releases", "watch", ""}, {"berth.dev", "releases", "patch", ""},
	{"berth.dev", "releases/status", "patch", ""}, {"berth.dev", "releases/finalizers", "update", ""},
	{"events.k8s.io", "events", "create", ""}, {"events.k8s.io", "events", "patch", ""},
	{"", "serviceaccounts", "impersonate", "deployer"}, {"", "serviceaccounts", "get", "deployer"},
	{"", "configmaps", "list", ""}, {"", "configmaps", "watch", ""},
	{"", "secrets", "list", ""}, {"", "secrets", "watch", ""},
}

// namespaceNeed is the one cluster-scoped request: whether a Release's namespace is being
// deleted.
var namespaceNeed = func(ns string) need { return need{"", "namespaces", "get", ns} }

// viewNeeds are what the controller watching every namespace watches of what every preflight
// reads (with watchNamespace, the preflight reads as the Release's account).
var viewNeeds = []need{
	{"", "namespaces", "list", ""}, {"", "namespaces", "watch", ""},
	{"admissionregistration.k8s.io", "mutatingwebhookconfigurations", "list", ""},
	{"admissionregistration.k8s.io", "mutatingwebhookconfigurations", "watch", ""},
	{"admissionregistration.k8s.io", "validatingwebhookconfigurations", "list", ""},
	{"admissionregistration.k8s.io", "validatingwebhookconfigurations", "watch", ""},
	{"apiregistration.k8s.io", "apiservices", "list", ""}, {"apiregistration.k8s.io", "apiservices", "watch", ""},
}

// leaderNeeds are the requests of leader election in the controller's namespace.
var leaderNeeds = []need{
	{"coordination.k8s.io", "leases", "create", ""},
	{"coordination.k8s.io", "leases", "get", controller.Name + ".berth.dev"},
	{"coordination.k8s.io", "leases", "update", controller.Name + ".berth.dev"},
	{"", "events", "create", ""},
}

// refused are rights the controller must not hold: it never acts as anyone but a Release's
// ServiceAccount, and never on what releases contain.
var refused = []need{
	{"", "users", "impersonate", "admin"}, {"", "groups", "impersonate", "system:masters"},
	{"apps", "deployments", "create", ""}, {"", "secrets", "create", ""}, {"", "secrets", "delete", ""},
	{"", "secrets", "get", "values"}, {"", "configmaps", "get", "values"},
	{"rbac.authorization.k8s.io", "clusterroles", "bind", ""},
}

// TestTemplateRBACCoversTheController renders the chart with berth template, watching every
// namespace and watching one, and checks that its roles allow every request the controller
// makes with its own rights, and nothing it must not do.
func TestTemplateRBACCoversTheController(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		kind, ns string // the kind and namespace of the controller's Releases role
	}{
		{"every namespace", nil, "ClusterRole", ""},
		{"one namespace", []string{"--set", "watchNamespace=apps"}, "Role", "apps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := renderChart(t, tc.args...)
			role := find[rbacv1.Role](t, objs, "Role", "berth-system", "ctl-berth-controller-leader-election")
			for _, n := range leaderNeeds {
				if !allows(role.Rules, n) {
					t.Errorf("the leader election Role does not allow %+v", n)
				}
			}
			var rules, nsRules []rbacv1.PolicyRule
			if tc.kind == "ClusterRole" {
				rules = find[rbacv1.ClusterRole](t, objs, "ClusterRole", "", "ctl-berth-controller").Rules
				find[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", "", "ctl-berth-controller")
				nsRules = rules
			} else {
				rules = find[rbacv1.Role](t, objs, "Role", tc.ns, "ctl-berth-controller").Rules
				find[rbacv1.RoleBinding](t, objs, "RoleBinding", tc.ns, "ctl-berth-controller")
				nsRules = find[rbacv1.ClusterRole](t, objs, "ClusterRole", "", "ctl-berth-controller-namespace").Rules
				find[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", "", "ctl-berth-controller-namespace")
				if allows(nsRules, namespaceNeed("other")) || len(nsRules) != 1 {
					t.Errorf("with watchNamespace set, the cluster-wide role grants more than reading that namespace: %+v", nsRules)
				}
			}
			for _, n := range viewNeeds {
				if got := allows(nsRules, n) || allows(rules, n); got != (tc.ns == "") {
					t.Errorf("the controller may %+v: %v, want %v", n, got, tc.ns == "")
				}
			}
			if !allows(nsRules, namespaceNeed(cmp.Or(tc.ns, "apps"))) {
				t.Errorf("the controller may not read namespace %s", cmp.Or(tc.ns, "apps"))
			}
			for _, n := range releaseNeeds {
				if !allows(rules, n) {
					t.Errorf("the controller's %s does not allow %+v", tc.kind, n)
				}
			}
			for _, n := range refused {
				if allows(rules, n) || allows(role.Rules, n) {
					t.Errorf("the controller's roles allow %+v", n)
				}
			}

			auth := find[rbacv1.ClusterRole](t, objs, "ClusterRole", "", "ctl-berth-controller-metrics-auth").Rules
			find[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", "", "ctl-berth-controller-metrics-auth")
			for _, n := range []need{{"authentication.k8s.io", "tokenreviews", "create", ""}, {"authorization.k8s.io", "subjectaccessreviews", "create", ""}} {
				if !allows(auth, n) {
					t.Errorf("the metrics-auth ClusterRole does not allow %+v", n)
				}
			}

			d := find[appsv1.Deployment](t, objs, "Deployment", "berth-system", "ctl-berth-controller")
			args := d.Spec.Template.Spec.Containers[0].Args
			want := []string{"controller", "--leader-elect", "--leader-election-namespace=berth-system",
				"--metrics-bind-address=:8080", "--metrics-secure=true", "--health-probe-bind-address=:8081", "--concurrency=4"}
			if tc.ns != "" {
				want = append(want, "--namespace="+tc.ns)
			}
			for _, a := range want {
				if !slices.Contains(args, a) {
					t.Errorf("the controller's arguments %q lack %q", args, a)
				}
			}
		})
	}
}

// TestTemplateHardening: the image pinned by digest, metrics over plain HTTP only when asked (and
// then no review rights), and a NetworkPolicy that admits only the metrics and probe ports.
func TestTemplateHardening(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	objs := renderChart(t, "--set", "image.digest="+digest, "--set", "image.tag=v9.9.9")
	d := find[appsv1.Deployment](t, objs, "Deployment", "berth-system", "ctl-berth-controller")
	if got := d.Spec.Template.Spec.Containers[0].Image; got != "ghcr.io/berthdev/berth@"+digest {
		t.Errorf("image %q, want it pinned by digest", got)
	}
	if slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "NetworkPolicy" }) {
		t.Error("a NetworkPolicy is rendered without networkPolicy.enabled")
	}

	objs = renderChart(t, "--set", "metrics.secure=false")
	d = find[appsv1.Deployment](t, objs, "Deployment", "berth-system", "ctl-berth-controller")
	if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--metrics-secure=false") {
		t.Errorf("metrics.secure=false: arguments %q", d.Spec.Template.Spec.Containers[0].Args)
	}
	if slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return strings.HasSuffix(o.GetName(), "-metrics-auth") }) {
		t.Error("metrics.secure=false still renders the review rights")
	}

	objs = renderChart(t, "--set", "networkPolicy.enabled=true",
		"--set", "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=monitoring")
	np := find[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy", "berth-system", "ctl-berth-controller")
	d = find[appsv1.Deployment](t, objs, "Deployment", "berth-system", "ctl-berth-controller")
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("the NetworkPolicy selects %s=%s, which the controller's Pods lack", k, v)
		}
	}
	var ports []string
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			ports = append(ports, p.Port.String())
		}
		if len(rule.Ports) == 1 && rule.Ports[0].Port.String() == "metrics" &&
			(len(rule.From) != 1 || rule.From[0].NamespaceSelector.MatchLabels["team"] != "monitoring") {
			t.Errorf("metrics are admitted from %+v, want the namespaces labelled team=monitoring", rule.From)
		}
	}
	if fmt.Sprint(ports) != "[metrics health]" || len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
		t.Errorf("NetworkPolicy admits ports %v with policy types %v, want metrics and health, ingress only", ports, np.Spec.PolicyTypes)
	}
}

// TestTemplateDeployment checks the rendered Deployment: the image defaults to the chart's
// appVersion, the root file system is read-only with the chart cache on an emptyDir, and the
// probes and metrics reach the ports the command listens on.
func TestTemplateDeployment(t *testing.T) {
	ch, err := loader.Load(chartDir(t))
	if err != nil {
		t.Fatal(err)
	}
	objs := renderChart(t)
	d := find[appsv1.Deployment](t, objs, "Deployment", "berth-system", "ctl-berth-controller")
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	if want := "ghcr.io/berthdev/berth:" + ch.Metadata.AppVersion; c.Image != want {
		t.Errorf("image %q, want %q", c.Image, want)
	}
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Errorf("pod securityContext %+v, want runAsNonRoot", pod.SecurityContext)
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("container securityContext %+v, want readOnlyRootFilesystem", c.SecurityContext)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("resources %+v, want requests", c.Resources)
	}

	// The cache directory the command is given is a mounted emptyDir.
	var cacheDir string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--cache-dir="); ok {
			cacheDir = v
		}
	}
	mounted := slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.MountPath == cacheDir && slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool {
			return v.Name == m.Name && v.EmptyDir != nil
		})
	})
	if cacheDir == "" || !mounted {
		t.Errorf("--cache-dir %q is not a mounted emptyDir (mounts %+v)", cacheDir, c.VolumeMounts)
	}

	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for probe, want := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != want || ports[probe.HTTPGet.Port.StrVal] != 8081 {
			t.Errorf("probe %+v, want GET %s on port 8081", probe, want)
		}
	}
	svc := find[corev1.Service](t, objs, "Service", "berth-system", "ctl-berth-controller-metrics")
	if port := svc.Spec.Ports[0].TargetPort.StrVal; ports[port] != 8080 {
		t.Errorf("the metrics Service targets port %q, which is not 8080", port)
	}

	// Values: an image tag, placement and pod annotations.
	objs = renderChart(t, "--set", "image.tag=v9.9.9", "--set", "nodeSelector.pool=system",
		"--set", "podAnnotations.team=platform", "--set", "replicas=2", "--set", "concurrency=8")
	d = find[appsv1.Deployment](t, objs, "Deployment", "berth-system", "ctl-berth-controller")
	pod = d.Spec.Template.Spec
	if pod.Containers[0].Image != "ghcr.io/berthdev/berth:v9.9.9" || pod.NodeSelector["pool"] != "system" ||
		d.Spec.Template.Annotations["team"] != "platform" || *d.Spec.Replicas != 2 ||
		!slices.Contains(pod.Containers[0].Args, "--concurrency=8") {
		t.Errorf("values not rendered: image %s, nodeSelector %v, annotations %v, replicas %d, args %q",
			pod.Containers[0].Image, pod.NodeSelector, d.Spec.Template.Annotations, *d.Spec.Replicas, pod.Containers[0].Args)
	}

	// The controller's tenancy flags.
	objs = renderChart(t, "--set", "defaultServiceAccount=releaser", "--set", "statusChartOutput=true")
	d = find[appsv1.Deployment](t, objs, "Deployment", "berth-system", "ctl-berth-controller")
	for _, a := range []string{"--default-service-account=releaser", "--status-chart-output"} {
		if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, a) {
			t.Errorf("arguments %q lack %q", d.Spec.Template.Spec.Containers[0].Args, a)
		}
	}
	d = find[appsv1.Deployment](t, renderChart(t), "Deployment", "berth-system", "ctl-berth-controller")
	if args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "); strings.Contains(args, "--status-chart-output") || strings.Contains(args, "--default-service-account") {
		t.Errorf("by default the controller runs with %q", args)
	}

	// An existing ServiceAccount.
	objs = renderChart(t, "--set", "serviceAccount.create=false", "--set", "serviceAccount.name=existing")
	if slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "ServiceAccount" }) {
		t.Error("serviceAccount.create=false renders a ServiceAccount")
	}
	d = find[appsv1.Deployment](t, objs, "Deployment", "berth-system", "ctl-berth-controller")
	if d.Spec.Template.Spec.ServiceAccountName != "existing" {
		t.Errorf("serviceAccountName %q, want existing", d.Spec.Template.Spec.ServiceAccountName)
	}
	if _, stderr, err := berthtest.RunBerth(t, "template", "ctl", chartDir(t), "--kube-version", "1.33.0", "--set", "serviceAccount.create=false"); err == nil {
		t.Error("serviceAccount.create=false without a name renders")
	} else if !strings.Contains(stderr+err.Error(), "serviceAccount.name") {
		t.Errorf("serviceAccount.create=false without a name: %v, want it to name serviceAccount.name", err)
	}
}

// TestTemplateStorageDriver: the value storageDriver is the controller's HELM_DRIVER, secret by
// default; memory, which the controller refuses, is refused when the chart renders.
func TestTemplateStorageDriver(t *testing.T) {
	driver := func(args ...string) string {
		t.Helper()
		d := find[appsv1.Deployment](t, renderChart(t, args...), "Deployment", "berth-system", "ctl-berth-controller")
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "HELM_DRIVER" {
				return e.Value
			}
		}
		return "(unset)"
	}
	if got := driver(); got != "secret" {
		t.Errorf("HELM_DRIVER by default: %q, want secret", got)
	}
	if got := driver("--set", "storageDriver=configmap"); got != "configmap" {
		t.Errorf("HELM_DRIVER with storageDriver=configmap: %q", got)
	}
	_, stderr, err := berthtest.RunBerth(t, "template", "ctl", chartDir(t), "--kube-version", "1.33.0", "--set", "storageDriver=memory")
	if err == nil || !strings.Contains(stderr+err.Error(), `storageDriver "memory": use secret (the default) or configmap`) {
		t.Errorf("storageDriver=memory: %v\n%s; want it refused, naming the value and the drivers", err, stderr)
	}
}

// renderChart renders the chart as release ctl of namespace berth-system with berth template. The
// Kubernetes version is given: in a test binary, Helm's default is v1.20, older than the chart
// supports.
func renderChart(t *testing.T, args ...string) []*unstructured.Unstructured {
	t.Helper()
	all := append([]string{"template", "ctl", chartDir(t), "-n", "berth-system", "--kube-version", "1.33.0"}, args...)
	stdout, stderr, err := berthtest.RunBerth(t, all...)
	if err != nil {
		t.Fatalf("berth %s: %v\n%s", strings.Join(all, " "), err, stderr)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewBufferString(stdout), 4096)
	var objs []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("decode berth template's output: %v", err)
		}
		if obj != nil {
			objs = append(objs, &unstructured.Unstructured{Object: obj})
		}
	}
}

// find returns the rendered object kind/ns/name as a T.
func find[T any](t *testing.T, objs []*unstructured.Unstructured, kind, ns, name string) *T {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
			var out T
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &out); err != nil {
				t.Fatalf("%s %s/%s: %v", kind, ns, name, err)
			}
			return &out
		}
	}
	t.Fatalf("the chart renders no %s %s/%s", kind, ns, name)
	return nil
}

// allows says whether rules allow n, as RBAC evaluates them.
func allows(rules []rbacv1.PolicyRule, n need) bool {
	match := func(list []string, v string) bool {
		return slices.Contains(list, v) || slices.Contains(list, "*")
	}
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return match(r.APIGroups, n.group) && match(r.Resources, n.resource) && match(r.Verbs, n.verb) &&
			(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, n.name))
	})
}
