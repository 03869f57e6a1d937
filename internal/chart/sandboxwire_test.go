package chart

import (
	"bufio"
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/common"

	"github.com/berthdev/berth/internal/allocs"
)

// wireStep is the template step of the test chart testdata/app, with values of every type the
// wire carries.
func wireStep(t testing.TB) TemplateStep {
	t.Helper()
	ch, err := Load(filepath.Join("testdata", "app"))
	if err != nil {
		t.Fatal(err)
	}
	top := common.Values{"Values": map[string]any{"s": "x", "n": 1000000, "i": int64(3), "f": 0.5, "b": true,
		"l": []any{"a", nil}, "m": map[string]any{"k": "v"}}, "Release": map[string]any{"Name": "rel"}}
	return TemplateStep{Chart: ch, Top: top}
}

func TestRenderRequestRoundTrip(t *testing.T) {
	step := wireStep(t)
	data, err := encodeRequest(step)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRequest(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(step.Top, got.Top); diff != "" {
		t.Errorf("data (-sent +read):\n%s", diff)
	}
	if len(got.Chart.Templates) != len(step.Chart.Templates) || got.Chart.Name() != step.Chart.Name() {
		t.Errorf("chart read: %s with %d templates, want %s with %d", got.Chart.Name(), len(got.Chart.Templates), step.Chart.Name(), len(step.Chart.Templates))
	}
	if _, err := decodeRequest(bytes.NewReader(data), int64(len(data))-1); err == nil {
		t.Error("a request over its limit was read")
	}
}

// FuzzRenderWire reads what crosses the renderer's pipes: the request the renderer reads and the
// answer the controller reads, each in a small multiple of its size, whatever the bytes.
func FuzzRenderWire(f *testing.F) {
	data, err := encodeRequest(wireStep(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"chart":{"metadata":{"name":"x"}},"top":{"t":"values","m":{"a":{"t":"list","l":[{},{},{}]}}}}`))
	f.Add([]byte(`{"top":{"t":"json","s":"[[[[[]]]]]"}}`))
	var answer bytes.Buffer
	w := bufio.NewWriter(&answer)
	writeFiles(w, map[string]string{"templates/a.yaml": "a: 1\n", "NOTES.txt": "hi"})
	f.Add(answer.Bytes())
	f.Add([]byte{answerError, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		// JSON of n bytes decodes into at most some 60n bytes of values (an empty object, 2
		// bytes, is a wireValue of some 100 bytes); the chart loader's own copies add a few n.
		if n := allocs.Of(func() { decodeRequest(bytes.NewReader(data), int64(len(data))) }); n > 1<<20+128*int64(len(data)) {
			t.Errorf("decodeRequest of %d bytes allocated %d bytes", len(data), n)
		}
		if n := allocs.Of(func() { readAnswer(data) }); n > 64<<10+4*int64(len(data)) {
			t.Errorf("readAnswer of %d bytes allocated %d bytes", len(data), n)
		}
	})
}

// BenchmarkRender is what a render costs in process and in a renderer process of its own (the
// controller's way): the sandbox's cost per render is the difference.
func BenchmarkRender(b *testing.B) {
	ch, err := Load(filepath.Join("testdata", "app"))
	if err != nil {
		b.Fatal(err)
	}
	vals := map[string]any{"greeting": "hi"}
	for _, bc := range []struct {
		name    string
		sandbox bool
	}{{"in-process", false}, {"sandboxed", true}} {
		b.Run(bc.name, func(b *testing.B) {
			opts := RenderOptions{ReleaseName: "rel", Namespace: "ns"}
			if bc.sandbox {
				opts.Templates = testSandbox(b, DefaultRenderLimits())
			}
			for b.Loop() {
				if _, err := Render(context.Background(), ch, vals, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
