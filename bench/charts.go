package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A benchmark chart is generated, so that its size is exact and it needs nothing but itself. Every
// chart takes two values: generation (1 on install, 2 on upgrade; half the objects carry it, so
// an upgrade changes half of them) and hooks (false leaves the hooks out, for the baseline that
// hook overhead is measured against).

// chartSpec describes one generated chart.
type chartSpec struct {
	Name string
	// Objects is how many objects the release has (custom resources included, CRDs from crds/
	// and hooks excluded).
	Objects int
	// CRDs is how many CustomResourceDefinitions the chart's crds/ holds.
	CRDs int
	// Hooks counts the hook Jobs run by each operation.
	Hooks map[string]int
	// Ordered says the chart declares an order (HIP-0025 resource groups): berth runs it with
	// --wait=ordered and the floor applies its groups one after another, each waited for.
	Ordered bool
	// files are the chart's files by chart-relative path.
	files map[string]string
}

// hookRun is how long each hook Job's Pod runs (devcluster.berth.dev/run): the simulated work
// that per-hook overhead is measured beyond.
const hookRun = "500ms"

// crdGroup is the API group of the large chart's custom resources.
const crdGroup = "bench.berth.dev"

func charts() []chartSpec {
	return []chartSpec{smallChart(), largeChart(), largeFlatChart(), hooksChart(), orderedChart(), controllerChart(),
		largeRecordChart(), hugeRecordChart()}
}

func chartByName(name string) (chartSpec, bool) {
	for _, c := range charts() {
		if c.Name == name {
			return c, true
		}
	}
	return chartSpec{}, false
}

// write writes the chart into dir/NAME and returns its path.
func (c chartSpec) write(dir string) (string, error) {
	root := filepath.Join(dir, c.Name)
	if err := os.RemoveAll(root); err != nil {
		return "", err
	}
	for name, content := range c.files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	return root, nil
}

func newChart(name, description string) map[string]string {
	return map[string]string{
		"Chart.yaml": fmt.Sprintf("apiVersion: v2\nname: %s\nversion: 1.0.0\ndescription: %q\n", name, description),
		"values.yaml": "# generation is 1 on install and 2 on upgrade: objects that carry it change.\n" +
			"generation: 1\n# hooks: false leaves the hook Jobs out.\nhooks: true\n",
	}
}

// changing renders the value that differs between install and upgrade for objects that change,
// and a constant for the others.
func changing(i int) string {
	if i%2 == 0 {
		return `"{{ .Values.generation }}"`
	}
	return `"1"`
}

// smallChart is 10 objects: a Deployment, its Service, ServiceAccount and RBAC, ConfigMaps, a Secret.
func smallChart() chartSpec {
	f := newChart("small", "10 objects: a Deployment with its Service, ServiceAccount, RBAC, configuration")
	var b strings.Builder
	b.WriteString(serviceAccount("app", changing(0)))
	b.WriteString(role("app", changing(1)))
	b.WriteString(roleBinding("app", changing(1)))
	for i := range 4 {
		b.WriteString(configMap(fmt.Sprintf("config-%d", i), changing(i), 4))
	}
	b.WriteString(secret("credentials", changing(0)))
	b.WriteString(service("app", changing(1)))
	b.WriteString(deployment("app", changing(0), 2, "app"))
	f["templates/app.yaml"] = b.String()
	return chartSpec{Name: "small", Objects: 10, Hooks: map[string]int{}, files: f}
}

// largeChart is 500 objects of mixed kinds: 20 Deployments, each with a Service, ServiceAccount,
// Role, RoleBinding, PodDisruptionBudget and NetworkPolicy; 20 CRDs (crds/) with one custom
// resource each; 180 ConfigMaps and 140 Secrets.
func largeChart() chartSpec {
	f := newChart("large", "500 objects of mixed kinds, 20 Deployments, 20 CRDs with one custom resource each")
	const apps, crds, configMaps, secrets = 20, 20, 180, 140
	var b strings.Builder
	for i := range apps {
		name := fmt.Sprintf("app-%02d", i)
		// Half the apps change, all seven objects of each.
		b.WriteString(serviceAccount(name, changing(i)))
		b.WriteString(role(name, changing(i)))
		b.WriteString(roleBinding(name, changing(i)))
		b.WriteString(service(name, changing(i)))
		b.WriteString(deployment(name, changing(i), 2, name))
		b.WriteString(pdb(name, changing(i)))
		b.WriteString(networkPolicy(name, changing(i)))
	}
	f["templates/apps.yaml"] = b.String()
	b.Reset()
	for i := range configMaps {
		b.WriteString(configMap(fmt.Sprintf("config-%03d", i), changing(i), 8))
	}
	f["templates/configmaps.yaml"] = b.String()
	b.Reset()
	for i := range secrets {
		b.WriteString(secret(fmt.Sprintf("secret-%03d", i), changing(i)))
	}
	f["templates/secrets.yaml"] = b.String()
	b.Reset()
	for i := range crds {
		f[fmt.Sprintf("crds/widget%02d.yaml", i)] = crd(i)
		b.WriteString(customResource(i, changing(i)))
	}
	f["templates/widgets.yaml"] = b.String()
	return chartSpec{Name: "large", Objects: apps*7 + crds + configMaps + secrets, CRDs: crds, Hooks: map[string]int{}, files: f}
}

// largeFlatChart is 500 objects of few kinds and no CRDs: 440 ConfigMaps and 20 Deployments,
// each with a Service and a Secret. Most of it is objects no controller acts on, so what it
// measures is how fast a tool sends objects and, on uninstall, how fast they go.
func largeFlatChart() chartSpec {
	f := newChart("large-flat", "500 objects: 440 ConfigMaps, 20 Deployments with a Service and a Secret each")
	const apps, configMaps = 20, 440
	var b strings.Builder
	for i := range apps {
		name := fmt.Sprintf("app-%02d", i)
		// Half the apps change, all three objects of each.
		b.WriteString(secret(name, changing(i)))
		b.WriteString(service(name, changing(i)))
		b.WriteString(deployment(name, changing(i), 2, ""))
	}
	f["templates/apps.yaml"] = b.String()
	b.Reset()
	for i := range configMaps {
		b.WriteString(configMap(fmt.Sprintf("config-%03d", i), changing(i), 8))
	}
	f["templates/configmaps.yaml"] = b.String()
	return chartSpec{Name: "large-flat", Objects: apps*3 + configMaps, Hooks: map[string]int{}, files: f}
}

// orderedGroups are the resource groups of the ordered chart, each after the one before.
var orderedGroups = []string{"first", "second", "third"}

// orderedChart is 300 objects in three resource groups of 100 (HIP-0025), each after the one
// before: 5 Deployments (2 replicas each) and 95 ConfigMaps a group. Ordered, a tool applies a
// group and waits until it is ready before it applies the next.
func orderedChart() chartSpec {
	f := newChart("ordered", "300 objects in three resource groups of 100, each after the one before: 5 Deployments and 95 ConfigMaps each")
	for g, group := range orderedGroups {
		var b strings.Builder
		for i := range 5 {
			b.WriteString(deployment(fmt.Sprintf("%s-app-%d", group, i), changing(i), 2, ""))
		}
		for i := range 95 {
			b.WriteString(configMap(fmt.Sprintf("%s-config-%02d", group, i), changing(i+5), 8)) // half of each group changes
		}
		annotations := "  annotations:\n    helm.sh/resource-group: " + group + "\n"
		if g > 0 {
			annotations += "    helm.sh/depends-on/resource-groups: '[\"" + orderedGroups[g-1] + "\"]'\n"
		}
		// The objects' own annotations (two spaces in), not their Pods'.
		f["templates/"+group+".yaml"] = strings.ReplaceAll(b.String(), "\n  annotations:\n    bench.berth.dev/generation:",
			"\n"+annotations+"    bench.berth.dev/generation:")
	}
	return chartSpec{Name: "ordered", Objects: 300, Ordered: true, Hooks: map[string]int{}, files: f}
}

// controllerChart is what each Release of the controller case releases: a ConfigMap, a
// Deployment of one replica and its Service. Its Pod runs as the namespace's default account.
func controllerChart() chartSpec {
	f := newChart("app", "3 objects: a ConfigMap, a Deployment of one replica and its Service")
	var b strings.Builder
	b.WriteString(configMap("config", changing(0), 4))
	b.WriteString(service("app", changing(1)))
	b.WriteString(deployment("app", changing(1), 1, ""))
	f["templates/app.yaml"] = b.String()
	return chartSpec{Name: "app", Objects: 3, Hooks: map[string]int{}, files: f}
}

// hookPlan is the hooks chart's hooks: event and weight of each, in no particular order.
var hookPlan = []struct {
	event  string
	weight int
}{
	{"pre-install", -5}, {"pre-install", -5}, {"pre-install", 0}, {"pre-install", 3}, {"pre-install", 10},
	{"post-install", 0}, {"post-install", 1}, {"post-install", 1}, {"post-install", 5},
	{"pre-upgrade", -1}, {"pre-upgrade", 0}, {"pre-upgrade", 0}, {"pre-upgrade", 2},
	{"post-upgrade", 0}, {"post-upgrade", 4}, {"post-upgrade", 4}, {"post-upgrade", 8},
	{"pre-delete", -2}, {"pre-delete", 0}, {"pre-delete", 7},
}

// hooksChart is 20 hook Jobs over pre/post-install, pre/post-upgrade and pre-delete with mixed
// weights, beside a Deployment with its ServiceAccount and a ConfigMap.
func hooksChart() chartSpec {
	f := newChart("hooks", "20 hook Jobs across pre/post-install, pre/post-upgrade and pre-delete, mixed weights")
	var b strings.Builder
	b.WriteString(serviceAccount("app", `"1"`))
	b.WriteString(configMap("settings", changing(0), 4))
	b.WriteString(deployment("app", `"1"`, 1, "app"))
	f["templates/app.yaml"] = b.String()
	b.Reset()
	b.WriteString("{{- if .Values.hooks }}\n")
	counts := map[string]int{}
	for i, h := range hookPlan {
		b.WriteString(hookJob(fmt.Sprintf("hook-%02d-%s", i, h.event), h.event, h.weight))
		switch h.event {
		case "pre-install", "post-install":
			counts["install"]++
		case "pre-upgrade", "post-upgrade":
			counts["upgrade"]++
			counts["noop"]++ // the no-op upgrade runs them again
		case "pre-delete":
			counts["uninstall"]++
		}
	}
	b.WriteString("{{- end }}\n")
	f["templates/hooks.yaml"] = b.String()
	return chartSpec{Name: "hooks", Objects: 3, Hooks: counts, files: f}
}

// hooks is how many hook Jobs a round of the case runs.
func (c benchCase) hooks() int {
	if !c.Hooks {
		return 0
	}
	n := 0
	for _, k := range c.Chart.Hooks {
		n += k
	}
	return n
}

// meta is an object's name, labels and the annotation that carries the generation.
func meta(name, generation string) string {
	return fmt.Sprintf(`metadata:
  name: %s
  labels:
    app.kubernetes.io/name: %s
    app.kubernetes.io/instance: {{ .Release.Name }}
  annotations:
    bench.berth.dev/generation: %s
`, name, name, generation)
}

func serviceAccount(name, generation string) string {
	return "---\napiVersion: v1\nkind: ServiceAccount\n" + meta(name, generation)
}

func role(name, generation string) string {
	return fmt.Sprintf(`---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
%srules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch]
`, meta(name, generation))
}

func roleBinding(name, generation string) string {
	return fmt.Sprintf(`---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
%[2]sroleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: %[1]s
subjects:
- kind: ServiceAccount
  name: %[1]s
  namespace: {{ .Release.Namespace }}
`, name, meta(name, generation))
}

func configMap(name, generation string, keys int) string {
	var data strings.Builder
	fmt.Fprintf(&data, "  generation: %s\n", generation)
	for k := range keys {
		fmt.Fprintf(&data, "  key-%d: %q\n", k, strings.Repeat(fmt.Sprintf("%s-%d ", name, k), 4))
	}
	return "---\napiVersion: v1\nkind: ConfigMap\n" + meta(name, `"1"`) + "data:\n" + data.String()
}

func secret(name, generation string) string {
	return fmt.Sprintf(`---
apiVersion: v1
kind: Secret
%stype: Opaque
stringData:
  generation: %s
  password: {{ printf "%%s-%s" .Release.Name | sha256sum | quote }}
`, meta(name, `"1"`), generation, name)
}

func service(name, generation string) string {
	return fmt.Sprintf(`---
apiVersion: v1
kind: Service
%[2]sspec:
  selector:
    app.kubernetes.io/name: %[1]s
    app.kubernetes.io/instance: {{ .Release.Name }}
  ports:
  - name: http
    port: 80
    targetPort: 8080
`, name, meta(name, generation))
}

// deployment is a Deployment whose Pods run as the ServiceAccount account, or as the
// namespace's default account when account is empty.
func deployment(name, generation string, replicas int, account string) string {
	if account != "" {
		account = "      serviceAccountName: " + account + "\n"
	}
	return fmt.Sprintf(`---
apiVersion: apps/v1
kind: Deployment
%[2]sspec:
  replicas: %[4]d
  selector:
    matchLabels:
      app.kubernetes.io/name: %[1]s
      app.kubernetes.io/instance: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: %[1]s
        app.kubernetes.io/instance: {{ .Release.Name }}
      annotations:
        bench.berth.dev/generation: %[3]s
    spec:
%[5]s      containers:
      - name: app
        image: registry.example/app:1.0
        ports:
        - containerPort: 8080
`, name, meta(name, `"1"`), generation, replicas, account)
}

func pdb(name, generation string) string {
	return fmt.Sprintf(`---
apiVersion: policy/v1
kind: PodDisruptionBudget
%[2]sspec:
  maxUnavailable: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: %[1]s
      app.kubernetes.io/instance: {{ .Release.Name }}
`, name, meta(name, generation))
}

func networkPolicy(name, generation string) string {
	return fmt.Sprintf(`---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
%[2]sspec:
  podSelector:
    matchLabels:
      app.kubernetes.io/name: %[1]s
  ingress:
  - ports:
    - port: 8080
`, name, meta(name, generation))
}

func widgetKind(i int) (kind, plural string) {
	return fmt.Sprintf("Widget%02d", i), fmt.Sprintf("widget%02ds", i)
}

func crd(i int) string {
	kind, plural := widgetKind(i)
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[2]s.%[3]s
spec:
  group: %[3]s
  scope: Namespaced
  names:
    kind: %[1]s
    plural: %[2]s
    singular: %[4]s
    listKind: %[1]sList
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size:
                type: integer
              generation:
                type: string
`, kind, plural, crdGroup, strings.ToLower(kind))
}

func customResource(i int, generation string) string {
	kind, _ := widgetKind(i)
	name := strings.ToLower(kind)
	return fmt.Sprintf(`---
apiVersion: %s/v1
kind: %s
%sspec:
  size: %d
  generation: %s
`, crdGroup, kind, meta(name, `"1"`), i+1, generation)
}

func hookJob(name, event string, weight int) string {
	return fmt.Sprintf(`---
apiVersion: batch/v1
kind: Job
metadata:
  name: %[1]s
  labels:
    app.kubernetes.io/name: %[1]s
    app.kubernetes.io/instance: {{ .Release.Name }}
  annotations:
    helm.sh/hook: %[2]s
    helm.sh/hook-weight: "%[3]d"
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations:
        devcluster.berth.dev/run: %[4]s
    spec:
      restartPolicy: Never
      containers:
      - name: hook
        image: registry.example/hook:1.0
        args: ["%[2]s"]
`, name, event, weight, hookRun)
}
