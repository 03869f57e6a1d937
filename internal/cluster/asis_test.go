package cluster

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestAppliedAsIs(t *testing.T) {
	desired := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "c", "namespace": "ns", "labels": map[string]any{"app": "web"}},
			"data":     map[string]any{"a": "1", "b": "2"},
		}}
	}
	owned := `{"f:data":{"f:a":{},"f:b":{}},"f:metadata":{"f:labels":{"f:app":{}}}}`
	live := func(fields, manager string, data map[string]any) *unstructured.Unstructured {
		obj := desired()
		obj.Object["data"] = data
		obj.SetUID("u1")
		obj.SetResourceVersion("7")
		obj.SetManagedFields([]metav1.ManagedFieldsEntry{
			{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:x":{}}}}`)}},
			{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}},
		})
		return obj
	}
	same := map[string]any{"a": "1", "b": "2"}
	for _, tt := range []struct {
		name    string
		desired *unstructured.Unstructured
		live    *unstructured.Unstructured
		want    bool
	}{
		{"as applied", desired(), live(owned, FieldManager, same), true},
		{"a value changed", desired(), live(owned, FieldManager, map[string]any{"a": "1", "b": "3"}), false},
		{"berth owns a field the chart dropped", desired(), live(`{"f:data":{"f:a":{},"f:b":{},"f:c":{}},"f:metadata":{"f:labels":{"f:app":{}}}}`, FieldManager,
			map[string]any{"a": "1", "b": "2", "c": "3"}), false},
		{"another manager owns them", desired(), live(owned, "kubectl", same), false},
		{"berth's former manager owns them", desired(), live(owned, formerManager, same), false},
		{"Helm's client-side apply set fields too", desired(), withEntry(live(owned, FieldManager, same),
			metav1.ManagedFieldsEntry{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:c":{}}}`)}}), false},
		{"not there", desired(), nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := AppliedAsIs(tt.desired, tt.live); got != tt.want {
				t.Errorf("AppliedAsIs = %v, want %v", got, tt.want)
			}
		})
	}
	withList := desired()
	withList.Object["spec"] = map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}
	if AppliedAsIs(withList, live(owned, FieldManager, same)) {
		t.Error("AppliedAsIs of an object with a list = true, want the dry run to decide")
	}
}

// withEntry returns obj with e added to its managed fields.
func withEntry(obj *unstructured.Unstructured, e metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	obj.SetManagedFields(append(obj.GetManagedFields(), e))
	return obj
}

// object reads an object written in YAML, as charts and the API server's answers are read.
func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

// applied returns live as the API server stores it after berth's apply, with the fields that
// apply owns (berth, in FieldsV1 JSON) and those of another manager (other, none when empty).
func applied(t *testing.T, live, berth, other string) *unstructured.Unstructured {
	t.Helper()
	obj := object(t, live)
	entries := []metav1.ManagedFieldsEntry{{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply,
		APIVersion: obj.GetAPIVersion(), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(berth)}}}
	if other != "" {
		entries = append(entries, metav1.ManagedFieldsEntry{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: obj.GetAPIVersion(), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(other)}})
	}
	obj.SetManagedFields(entries)
	obj.SetResourceVersion("7")
	return obj
}

// TestAppliedAsIsWithLists compares objects with lists, CRDs among them, to what berth applied:
// a list the API server records as owned whole (atomic) is compared whole, one owned by element
// keys element by element, a set value by value; fields the API server defaulted are not a change
// unless desired names them. Whenever the comparison cannot tell, it says false (the dry run
// decides).
func TestAppliedAsIsWithLists(t *testing.T) {
	const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
  labels: {app: gadgets}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
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
              size: {type: integer, minimum: 1}
              tags: {type: array, items: {type: string}}
`
	// As stored: the API server defaulted conversion, listKind and singular, and wrote a status.
	const crdLive = crd + `  conversion: {strategy: None}
status:
  acceptedNames: {kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget}
  storedVersions: [v1]
`
	crdLiveNames := strings.Replace(crdLive, "names: {kind: Gadget, plural: gadgets}", "names: {kind: Gadget, plural: gadgets, listKind: GadgetList, singular: gadget}", 1)
	const crdOwned = `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:group":{},"f:names":{"f:kind":{},"f:plural":{}},"f:scope":{},"f:versions":{}}}`
	const crdStatus = `{"f:status":{"f:acceptedNames":{"f:kind":{},"f:listKind":{},"f:plural":{},"f:singular":{}},"f:storedVersions":{}}}`

	const deploy = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns, labels: {app: web}, finalizers: [example.com/a]}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: example.invalid/web
        args: [--port, "8080"]
        ports: [{containerPort: 8080, protocol: TCP}]
        resources: {}
      - name: sidecar
        image: example.invalid/sidecar
`
	// As stored: the API server defaulted fields of the Deployment and of each container.
	deployLive := strings.NewReplacer(
		"  replicas: 2\n", "  replicas: 2\n  revisionHistoryLimit: 10\n  strategy: {type: RollingUpdate}\n",
		"        image: example.invalid/web\n", "        image: example.invalid/web\n        imagePullPolicy: Always\n        terminationMessagePath: /dev/termination-log\n",
		"        image: example.invalid/sidecar\n", "        image: example.invalid/sidecar\n        imagePullPolicy: Always\n",
	).Replace(deploy)
	web, sidecar := strings.Index(deployLive, "      - name: web\n"), strings.Index(deployLive, "      - name: sidecar\n")
	reordered := deployLive[:web] + deployLive[sidecar:] + deployLive[web:sidecar]
	const deployOwned = `{"f:metadata":{"f:finalizers":{".":{},"v:\"example.com/a\"":{}},"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},` +
		`"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{` +
		`"k:{\"name\":\"web\"}":{".":{},"f:args":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}},"f:resources":{}},` +
		`"k:{\"name\":\"sidecar\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`

	for _, tt := range []struct {
		name          string
		desired       string
		live          string
		owned, others string
		want          bool
	}{
		{name: "a CRD as applied, with what the API server defaulted", desired: crd, live: crdLive, owned: crdOwned, others: crdStatus, want: true},
		{name: "a CRD whose versions changed", desired: strings.Replace(crd, "minimum: 1", "minimum: 2", 1), live: crdLive, owned: crdOwned, want: false},
		{name: "a CRD with a property more", desired: strings.Replace(crd, "              size:", "              color: {type: string}\n              size:", 1), live: crdLive, owned: crdOwned, want: false},
		{name: "a CRD that names a field the API server defaulted", desired: strings.Replace(crd, "plural: gadgets}", "plural: gadgets, singular: gadget}", 1), live: crdLiveNames, owned: crdOwned, want: false},
		{name: "a CRD whose versions another manager owns a part of", desired: crd, live: crdLive, owned: crdOwned,
			others: `{"f:spec":{"f:versions":{"k:{\"name\":\"v1\"}":{"f:served":{}}}}}`, want: false},
		{name: "a value written differently than it is stored", want: false,
			desired: "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\nstringData: {p: x}\n",
			live:    "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\ndata: {p: eA==}\ntype: Opaque\n",
			owned:   `{"f:stringData":{"f:p":{}}}`},
		{name: "a Deployment as applied, with what the API server defaulted", desired: deploy, live: deployLive, owned: deployOwned, want: true},
		{name: "a container's image changed", desired: strings.Replace(deploy, "example.invalid/sidecar", "example.invalid/sidecar:2", 1), live: deployLive, owned: deployOwned, want: false},
		{name: "an atomic list changed", desired: strings.Replace(deploy, `"8080"]`, `"8081"]`, 1), live: deployLive, owned: deployOwned, want: false},
		{name: "a container the chart dropped", desired: deploy[:strings.Index(deploy, "      - name: sidecar")], live: deployLive, owned: deployOwned, want: false},
		{name: "containers in another order", desired: deploy, owned: deployOwned, want: false, live: reordered},
		{name: "a container another manager added", desired: deploy, owned: deployOwned, want: false,
			live: deployLive + "      - {name: injected, image: example.invalid/proxy}\n"},
		{name: "a port keyed by a field the chart leaves to its default", desired: strings.Replace(deploy, "[{containerPort: 8080, protocol: TCP}]", "[{containerPort: 8080}]", 1),
			live: deployLive, owned: deployOwned, want: false},
		{name: "an empty map the API server filled", desired: deploy, owned: deployOwned, want: false,
			live: strings.Replace(deployLive, "resources: {}", "resources: {limits: {cpu: \"1\"}}", 1)},
		{name: "a finalizer another manager added", desired: deploy, owned: deployOwned, want: false,
			live: strings.Replace(deployLive, "finalizers: [example.com/a]", "finalizers: [example.com/a, example.com/b]", 1)},
		{name: "a null", desired: strings.Replace(deploy, "replicas: 2", "replicas: null", 1), live: deployLive, owned: deployOwned, want: false},
		{name: "a number of another value live", desired: deploy, owned: deployOwned, want: false,
			live: strings.Replace(deployLive, "replicas: 2", "replicas: 2.5", 1)},
		{name: "two containers of one name", desired: strings.Replace(deploy, "name: sidecar", "name: web", 1), live: deployLive, owned: deployOwned, want: false},
		{name: "a list owned by index", desired: deploy, live: deployLive, want: false,
			owned: strings.Replace(strings.Replace(deployOwned, `k:{\"name\":\"web\"}`, `i:0`, 1), `k:{\"name\":\"sidecar\"}`, `i:1`, 1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := AppliedAsIs(object(t, tt.desired), applied(t, tt.live, tt.owned, tt.others)); got != tt.want {
				t.Errorf("AppliedAsIs = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSameValueIsTheSameJSON compares values as the apply writes them in JSON: a number read as
// a float (a CRD's minimum, decoded into its Go type) is the integer it is written as.
func TestSameValueIsTheSameJSON(t *testing.T) {
	for _, tt := range []struct {
		want, have any
		same       bool
	}{
		{float64(0), int64(0), true},
		{int64(3), float64(3), true},
		{float64(2.5), int64(2), false},
		{float64(1e21), int64(1e18), false},
		{"1", int64(1), false},
		{map[string]any{"minimum": float64(1), "type": "integer"}, map[string]any{"minimum": int64(1), "type": "integer"}, true},
		{map[string]any{"minimum": float64(1)}, map[string]any{"minimum": int64(1), "type": "integer"}, false},
		{[]any{"a", int64(1)}, []any{"a", float64(1)}, true},
		{[]any{"a", "b"}, []any{"b", "a"}, false},
		{nil, nil, true},
		{nil, map[string]any{}, false},
	} {
		if got := sameValue(tt.want, tt.have); got != tt.same {
			t.Errorf("sameValue(%#v, %#v) = %v, want %v", tt.want, tt.have, got, tt.same)
		}
	}
}
