package lifecycle

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// parityChart has a value, a NOTES.txt, a hook and a ConfigMap: every part of a release that
// helm's -o json shows.
var parityChart = map[string]string{
	"values.yaml": "greeting: hello\nlist: [a, b]\nnested:\n  n: 1\n",
	"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  greeting: {{ .Values.greeting | quote }}
`,
	"templates/hook.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-hook
  annotations:
    helm.sh/hook: post-install,post-upgrade
    helm.sh/hook-delete-policy: before-hook-creation
data: {}
`,
	"templates/NOTES.txt": "Greeting: {{ .Values.greeting }}\n",
}

// timeKeys are the keys whose values are times or durations: they differ between any two runs.
var timeKeys = []string{"first_deployed", "last_deployed", "deleted", "updated", "started_at", "completed_at", "last_run"}

// TestOutputParityWithHelm runs install, upgrade, status, history, list and get values with
// -o json and -o yaml through berth and through helm, and compares them key by key: for the same
// release the values are equal but for times; for an install or upgrade of twin releases the keys
// and value types are the same, with berth's report under its own key "berth" beside them.
func TestOutputParityWithHelm(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "parity", parityChart)
	const byBerth, byHelm = "by-berth", "by-helm"

	for _, format := range []string{"json", "yaml"} {
		suffix := "-" + format
		b, _ := berthtest.MustBerth(t, env, "install", byBerth+suffix, chart, "--set", "nested.n=2", "-o", format)
		h := berthtest.MustHelm(t, env, "install", byHelm+suffix, chart, "--set", "nested.n=2", "-o", format)
		assertSameShape(t, "install -o "+format, decode(t, format, b), decode(t, format, h), "berth")

		b, _ = berthtest.MustBerth(t, env, "upgrade", byBerth+suffix, chart, "--set", "greeting=hi", "-o", format)
		h = berthtest.MustHelm(t, env, "upgrade", byHelm+suffix, chart, "--set", "greeting=hi", "-o", format)
		assertSameShape(t, "upgrade -o "+format, decode(t, format, b), decode(t, format, h), "berth")
	}

	// One release with a history of both tools: revision 1 by berth, 2 by helm, 3 by berth.
	const name = byBerth + "-json"
	berthtest.MustHelm(t, env, "upgrade", name, chart, "--set", "list={c}")
	berthtest.MustBerth(t, env, "rollback", name, "1")

	for _, format := range []string{"json", "yaml"} {
		for _, args := range [][]string{
			{"status", name},
			{"status", name, "--revision", "2"},
			{"history", name},
			{"list"},
			{"list", "--filter", "^by-berth", "--superseded"},
			{"get", "values", name},
			{"get", "values", name, "--all"},
			{"get", "values", name, "--revision", "2"},
		} {
			what := strings.Join(args, " ") + " -o " + format
			b, _ := berthtest.MustBerth(t, env, append(args, "-o", format)...)
			h := berthtest.MustHelm(t, env, append(args, "-o", format)...)
			bv, hv := decode(t, format, b), decode(t, format, h)
			assertSameShape(t, what, bv, hv)
			if got, want := withoutTimes(bv), withoutTimes(hv); !equalJSON(got, want) {
				t.Errorf("%s: berth and helm differ but for times:\nberth: %s\n helm: %s", what, marshal(got), marshal(want))
			}
		}
	}
}

// decode reads -o json or -o yaml output into plain JSON values.
func decode(t *testing.T, format, out string) any {
	t.Helper()
	data := []byte(out)
	if format == "yaml" {
		var err error
		if data, err = yaml.YAMLToJSON(data); err != nil {
			t.Fatalf("output is not YAML: %v\n%s", err, out)
		}
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	return v
}

// assertSameShape fails the test where got and want differ in their keys or in the JSON types of
// their values, anywhere in the tree. extra names top-level keys got may have beside want's.
func assertSameShape(t *testing.T, what string, got, want any, extra ...string) {
	t.Helper()
	var diffs []string
	shapeDiff("", got, want, extra, &diffs)
	if len(diffs) > 0 {
		t.Errorf("%s: berth's output differs in shape from helm's:\n  %s", what, strings.Join(diffs, "\n  "))
	}
}

func shapeDiff(path string, got, want any, extra []string, diffs *[]string) {
	if typeOf(got) != typeOf(want) {
		*diffs = append(*diffs, fmt.Sprintf("%s: berth has %s, helm %s", pathOr(path), typeOf(got), typeOf(want)))
		return
	}
	switch w := want.(type) {
	case map[string]any:
		g := got.(map[string]any)
		for _, k := range sortedKeys(w) {
			if _, ok := g[k]; !ok {
				*diffs = append(*diffs, fmt.Sprintf("%s: berth lacks key %q", pathOr(path), k))
				continue
			}
			shapeDiff(path+"."+k, g[k], w[k], nil, diffs)
		}
		for _, k := range sortedKeys(g) {
			if _, ok := w[k]; !ok && !(path == "" && slices.Contains(extra, k)) {
				*diffs = append(*diffs, fmt.Sprintf("%s: berth has key %q helm has not", pathOr(path), k))
			}
		}
	case []any:
		g := got.([]any)
		if len(g) != len(w) {
			*diffs = append(*diffs, fmt.Sprintf("%s: berth has %d items, helm %d", pathOr(path), len(g), len(w)))
		}
		for i := range min(len(g), len(w)) {
			shapeDiff(fmt.Sprintf("%s[%d]", path, i), g[i], w[i], nil, diffs)
		}
	}
}

func typeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	}
	return fmt.Sprintf("%T", v)
}

func pathOr(path string) string {
	if path == "" {
		return "top level"
	}
	return path
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// withoutTimes returns v with the values of timeKeys removed wherever they appear.
func withoutTimes(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if !slices.Contains(timeKeys, k) {
				out[k] = withoutTimes(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = withoutTimes(x)
		}
		return out
	}
	return v
}

func equalJSON(a, b any) bool { return marshal(a) == marshal(b) }

func marshal(v any) string {
	out, _ := json.Marshal(v)
	return string(out)
}
