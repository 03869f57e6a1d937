package lifecycle

import (
	"encoding/base64"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// goodTemplate is a valid object every bad chart holds too, so that a partial install shows.
const goodTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: good
data:
  color: blue
`

// badInput is something berth must refuse to install or upgrade to.
type badInput struct {
	name string
	// templates of the chart, beside templates/good.yaml; nil for a chart path that does not exist.
	templates map[string]string
	// args follow install RELEASE CHART.
	args []string
	// want are the parts of the error that name the culprit; {ns} is the test's namespace.
	want []string
	// namespace, when set, is the (missing) namespace to install into.
	namespace string
}

// TestBadInputChangesNothing installs what cannot be installed, and upgrades a release to it,
// and expects berth to fail, name the culprit and leave the namespace as it was.
func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	tests := []badInput{
		{
			name:      "template error",
			templates: map[string]string{"templates/broken.yaml": "{{ include \"no-such-helper\" . }}\n"},
			want:      []string{"templates/broken.yaml", "no-such-helper"},
		},
		{
			name: "invalid YAML",
			templates: map[string]string{"templates/unclosed.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: unclosed
data:
  key: [unclosed
`},
			want: []string{"templates/unclosed.yaml"},
		},
		{
			name: "unknown kind",
			templates: map[string]string{"templates/gadget.yaml": `apiVersion: nothing.example.com/v1
kind: Gadget
metadata:
  name: widget
`},
			want: []string{"Gadget.nothing.example.com/", "widget"},
		},
		{
			name: "container without image",
			templates: map[string]string{"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: noimage
spec:
  selector: {matchLabels: {app: noimage}}
  template:
    metadata: {labels: {app: noimage}}
    spec:
      containers:
      - name: app
`},
			want: []string{"Deployment.apps/{ns}/noimage", "image"},
		},
		{
			name: "service with invalid port",
			templates: map[string]string{"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: badport
spec:
  selector: {app: web}
  ports:
  - port: 70000
`},
			want: []string{"Service/{ns}/badport", "70000"},
		},
		{
			name: "chart path that does not exist",
			want: []string{"does-not-exist"},
		},
		{
			name:      "malformed --set",
			templates: map[string]string{},
			args:      []string{"--set", "a.b"},
			want:      []string{"a.b"},
		},
		{
			name:      "record larger than it may be",
			templates: noiseFiles(5, 5<<20),
			want:      []string{"release bad revision", "the record would take", "16.0 MiB"},
		},
		{
			name:      "watch window as long as the deadline",
			templates: map[string]string{},
			args:      []string{"--watch-for", "1m", "--timeout", "1m"},
			want:      []string{"--watch-for 1m0s does not fit in --timeout 1m0s"},
		},
		{
			name:      "watch window in the third kept for rolling back",
			templates: map[string]string{},
			args:      []string{"--watch-for", "40s", "--timeout", "1m", "--rollback-on-failure"},
			want:      []string{"--watch-for 40s does not fit in --timeout 1m0s", "shorter than 40s"},
		},
		{
			name:      "negative --watch-restarts",
			templates: map[string]string{},
			args:      []string{"--watch-for", "10s", "--watch-restarts", "-1"},
			want:      []string{"--watch-restarts -1"},
		},
		{
			name:      "namespace that does not exist",
			templates: map[string]string{},
			namespace: "missing",
			want:      []string{"missing", "--create-namespace"},
		},
	}
	for _, op := range []string{"install", "upgrade"} {
		for _, tt := range tests {
			if op == "upgrade" && tt.namespace != "" {
				continue // a release that does not exist cannot be upgraded
			}
			t.Run(op+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				testBadInput(t, op, tt)
			})
		}
	}
}

func testBadInput(t *testing.T, op string, tt badInput) {
	env := testenv.New(t)
	chart := filepath.Join(t.TempDir(), "does-not-exist")
	if tt.templates != nil {
		chart = berthtest.WriteChart(t, "bad", mapWith(tt.templates, "templates/good.yaml", goodTemplate))
	}
	ns := env.Namespace
	if tt.namespace != "" {
		ns = tt.namespace + "-" + berthtest.Suffix(env)
	}
	if op == "upgrade" {
		berthtest.MustBerth(t, env, "install", "bad", berthtest.WriteChart(t, "bad", map[string]string{"templates/good.yaml": goodTemplate}))
	}
	before := snapshot(t, env)

	args := append([]string{op, "bad", chart}, tt.args...)
	stdout, stderr, err := berthtest.RunBerth(t, append(args, "--kubeconfig", env.Kubeconfig, "-n", ns)...)
	if err == nil {
		t.Fatalf("berth %s succeeded, want an error\nstdout:\n%s", strings.Join(args, " "), stdout)
	}
	for _, w := range tt.want {
		w = strings.ReplaceAll(w, "{ns}", env.Namespace)
		if !strings.Contains(err.Error(), w) {
			t.Errorf("berth %s: error does not name %q:\n%v", strings.Join(args, " "), w, err)
		}
	}
	if !strings.Contains(stderr, err.Error()) {
		t.Errorf("berth %s: stderr does not show the error:\n%s", strings.Join(args, " "), stderr)
	}
	assertUnchanged(t, env, before)
	if op == "install" {
		berthtest.AssertNoRecords(t, env)
	} else {
		assertHistory(t, env, "bad", revision{1, "deployed", "Install complete"})
	}
	if ns != env.Namespace {
		_, err := env.Client.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("namespace %s: got %v, want it not to exist", ns, err)
		}
	}
}

// mapWith returns a copy of m with key set to value.
func mapWith(m map[string]string, key, value string) map[string]string {
	out := maps.Clone(m)
	out[key] = value
	return out
}

// TestCreateNamespaceUndoneWhenNothingElseChanged installs, with --create-namespace, a chart the
// API server refuses. Creating the namespace is a plan of its own, run first, since the dry run
// needs it; the install then stops before anything else changed, and deleting the namespace is
// another plan: both steps show, and the namespace is gone (or going).
func TestCreateNamespaceUndoneWhenNothingElseChanged(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	ns := "created-" + berthtest.Suffix(env)
	chart := berthtest.WriteChart(t, "bad", map[string]string{"templates/service.yaml": `apiVersion: v1
kind: Service
metadata: {name: badport}
spec:
  selector: {app: web}
  ports: [{port: 70000}]
`})
	_, stderr, err := berthtest.RunBerth(t, "install", "bad", chart, "--create-namespace", "--kubeconfig", env.Kubeconfig, "-n", ns)
	if err == nil || !strings.Contains(err.Error(), "70000") {
		t.Fatalf("install: %v, want the API server's refusal of port 70000", err)
	}
	for _, step := range []string{"create-namespace/" + ns, "delete-namespace/" + ns} {
		if !strings.Contains(stderr, step+":") {
			t.Errorf("the install does not show step %s:\n%s", step, stderr)
		}
	}
	got, err := env.Client.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err == nil && got.DeletionTimestamp.IsZero() {
		t.Errorf("namespace %s is still there and not being deleted", ns)
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// noiseFiles are n chart files of size bytes of incompressible text each (base64 of seeded random
// bytes), that every revision's record keeps whole.
func noiseFiles(n, size int) map[string]string {
	rnd := rand.New(rand.NewPCG(uint64(n), uint64(size)))
	files := map[string]string{}
	for i := range n {
		b := make([]byte, size*3/4)
		for j := range b {
			b[j] = byte(rnd.UintN(256))
		}
		files[fmt.Sprintf("files/blob-%d.txt", i)] = base64.StdEncoding.EncodeToString(b)
	}
	return files
}
