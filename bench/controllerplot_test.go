package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// svgElement is an element of a drawn plot, with its attributes and the panel (the index of
// its <g>) it is in; -1 outside any.
type svgElement struct {
	Name  string
	Attr  map[string]string
	Panel int
	Text  string
}

// parseSVG checks that svg is well-formed XML with one <svg> root and returns its elements.
func parseSVG(t testing.TB, svg []byte) []svgElement {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	var out []svgElement
	var open []int // indexes into out of the open elements
	panel, panels, roots := -1, 0, 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if len(open) == 0 {
				roots++
				if tok.Name.Local != "svg" || tok.Name.Space != "http://www.w3.org/2000/svg" {
					t.Fatalf("root element %v, want svg of the SVG namespace", tok.Name)
				}
			}
			if tok.Name.Local == "g" {
				panel, panels = panels, panels+1
			}
			el := svgElement{Name: tok.Name.Local, Attr: map[string]string{}, Panel: panel}
			for _, a := range tok.Attr {
				el.Attr[a.Name.Local] = a.Value
			}
			out = append(out, el)
			open = append(open, len(out)-1)
		case xml.EndElement:
			if tok.Name.Local == "g" {
				panel = -1
			}
			open = open[:len(open)-1]
		case xml.CharData:
			// An element's text is all the text inside it: a point's is its <title>'s.
			for _, i := range open {
				out[i].Text += string(tok)
			}
		}
	}
	if roots != 1 {
		t.Fatalf("%d root elements, want 1", roots)
	}
	return out
}

func attrFloat(t *testing.T, el svgElement, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(el.Attr[name], 64)
	if err != nil {
		t.Fatalf("%s %s=%q: %v", el.Name, name, el.Attr[name], err)
	}
	return v
}

// plotInput is a small set of results: one controller and 4 shards at 100 and 10,000
// Releases, and one controller failing at 1000.
func plotInput() controllerResults {
	const mib = 1 << 20
	return controllerResults{
		Machine: machine{CPUs: 2},
		Runs: []controllerRun{
			{Releases: 100, ControllerQPS: 1000, Concurrency: 4, ReadySeconds: 10, PeakRSSReadyBytes: 80 * mib, CPUSecondsReady: 2, ClusterCPUSecondsReady: 20, Requests: 4400},
			{Releases: 1000, ControllerQPS: 1000, Concurrency: 4, Error: "Releases Ready: not after 30m0s"},
			{Releases: 10000, ControllerQPS: 1000, Concurrency: 4, ReadySeconds: 1000, PeakRSSReadyBytes: 200 * mib, CPUSecondsReady: 200, ClusterCPUSecondsReady: 2000, Requests: 440000},
		},
		Fleet: []fleetRun{
			{Kind: fleetShards, Releases: 100, ControllerQPS: 1000, Concurrency: 4, ReadySeconds: 12, Requests: 4400, ClusterCPUSecondsReady: 20,
				Controllers: []fleetController{{Name: "shard1", PeakRSSReadyBytes: 60 * mib, CPUSecondsReady: 1}, {Name: "shard2", PeakRSSReadyBytes: 70 * mib, CPUSecondsReady: 1},
					{Name: "shard3", PeakRSSReadyBytes: 60 * mib, CPUSecondsReady: 1}, {Name: "shard4", PeakRSSReadyBytes: 60 * mib, CPUSecondsReady: 1}}},
			{Kind: fleetShards, Releases: 10000, ControllerQPS: 1000, Concurrency: 4, ReadySeconds: 900, Requests: 440000, ClusterCPUSecondsReady: 1800,
				Controllers: []fleetController{{Name: "shard1", PeakRSSReadyBytes: 100 * mib, CPUSecondsReady: 50}, {Name: "shard2", PeakRSSReadyBytes: 100 * mib, CPUSecondsReady: 50},
					{Name: "shard3", PeakRSSReadyBytes: 100 * mib, CPUSecondsReady: 50}, {Name: "shard4", PeakRSSReadyBytes: 120 * mib, CPUSecondsReady: 50}}},
		},
	}
}

func TestControllerSVGDrawsEveryPointWhereExpected(t *testing.T) {
	svg := controllerSVG(plotInput())
	els := parseSVG(t, svg)
	if !bytes.Equal(svg, controllerSVG(plotInput())) {
		t.Error("two drawings of the same results differ")
	}
	// Each panel's points, by its legend's names: "name Releases" → (x, y) in the panel's area.
	type at struct{ X, Y float64 }
	points := map[int]map[string]at{}
	for _, el := range els {
		if el.Attr["class"] != "point" {
			continue
		}
		var x, y float64
		if el.Name == "circle" {
			x, y = attrFloat(t, el, "cx"), attrFloat(t, el, "cy")
		} else {
			x, y = attrFloat(t, el, "x")+4, attrFloat(t, el, "y")+4
		}
		name, rest, _ := strings.Cut(el.Text, ", ")
		releases, _, _ := strings.Cut(rest, " Releases")
		// The area's origin: the panel's column and row.
		x -= float64((el.Panel%plotColumns)*panelWidth + areaLeft)
		if points[el.Panel] == nil {
			points[el.Panel] = map[string]at{}
		}
		points[el.Panel][name+" "+releases] = at{X: math.Round(x), Y: y}
	}
	const width = panelWidth - areaLeft - areaRight
	// Rows: the second row's area starts a panel's height lower; its top is read from the
	// points that sit on the top of a log scale.
	top := float64(plotHeaderTop + panelTop)
	want := map[int]map[string]at{
		// Time until all Ready: 10 … 1000 s, a log scale over two decades.
		0: {
			"one controller 100":    {0, top + areaHeight},
			"one controller 10,000": {width, top},
			"4 shards 100":          {0, top + areaHeight*(1-math.Log10(1.2)/2)},
			"4 shards 10,000":       {width, top + areaHeight*(1-math.Log10(90)/2)},
		},
		// Peak RSS: 80 … 420 MiB, linear from 0 to 500.
		1: {
			"one controller 100":                 {0, top + areaHeight*(1-80.0/500)},
			"one controller 10,000":              {width, top + areaHeight*(1-200.0/500)},
			"4 shards: sum of the shards 100":    {0, top + areaHeight*(1-250.0/500)},
			"4 shards: sum of the shards 10,000": {width, top + areaHeight*(1-420.0/500)},
			"4 shards: largest shard 100":        {0, top + areaHeight*(1-70.0/500)},
			"4 shards: largest shard 10,000":     {width, top + areaHeight*(1-120.0/500)},
		},
	}
	for panel, w := range want {
		got := points[panel]
		for k, p := range got {
			got[k] = at{X: p.X, Y: math.Round(p.Y*10) / 10}
		}
		for k, p := range w {
			w[k] = at{X: p.X, Y: math.Round(p.Y*10) / 10}
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("panel %d's points (-want +got):\n%s", panel, diff)
		}
	}
	// Requests per Release: 44 for each run, every point at the same height.
	var heights []float64
	for k, p := range points[2] {
		if !strings.HasSuffix(k, " 100") && !strings.HasSuffix(k, " 10,000") {
			t.Errorf("requests panel: unexpected point %q", k)
		}
		heights = append(heights, p.Y)
	}
	if len(heights) != 4 {
		t.Errorf("requests panel: %d points, want 4", len(heights))
	}
	for _, h := range heights {
		if h != heights[0] {
			t.Errorf("requests panel: points at heights %v, want one", heights)
			break
		}
	}
	// CPU: the controller's, the cluster's, the shards' summed, the shards' cluster.
	var cpu []string
	for k := range points[3] {
		cpu = append(cpu, k)
	}
	for _, k := range []string{"one controller: controller 100", "one controller: cluster 10,000", "4 shards: controllers (sum) 10,000", "4 shards: cluster 100"} {
		if _, ok := points[3][k]; !ok {
			t.Errorf("CPU panel: no point %q among %q", k, cpu)
		}
	}
	if !strings.Contains(string(svg), "Failed before Ready (no point): 1,000 Releases, one controller") &&
		!strings.Contains(string(svg), "Failed before Ready (no point): 1000 Releases, one controller") {
		t.Errorf("the failed run is not named:\n%s", svg)
	}
	for _, p := range points {
		for k := range p {
			if strings.HasSuffix(k, " 1,000") {
				t.Errorf("a point %q for the failed run", k)
			}
		}
	}
}

func TestControllerSVGEscapesText(t *testing.T) {
	r := plotInput()
	r.Label = `<script>alert("x")</script> & more`
	els := parseSVG(t, controllerSVG(r))
	for _, el := range els {
		if el.Name == "script" {
			t.Fatal("the label became an element")
		}
	}
	if els[3].Text != r.Label {
		t.Errorf("the line under the title is %q, want the label", els[3].Text)
	}
	r.Label = strings.Repeat("é", 200)
	els = parseSVG(t, controllerSVG(r))
	if want := strings.Repeat("é", 109) + "…"; els[3].Text != want {
		t.Errorf("a long label is drawn as %q, want %q", els[3].Text, want)
	}
}

func TestControllerSVGNamesWhatDiffers(t *testing.T) {
	r := plotInput()
	for i := range r.Runs {
		r.Runs[i].Interval = "1m"
	}
	for i := range r.Fleet {
		r.Fleet[i].Interval = "1m"
	}
	svg := string(controllerSVG(r))
	if !strings.Contains(svg, "every Release at interval 1m") || strings.Contains(svg, "one controller, interval") {
		t.Errorf("an interval every run shares is not said once, in the subtitle:\n%s", svg)
	}
	r.Runs[0].Interval, r.Runs[0].ControllerQPS = "", 20
	svg = string(controllerSVG(r))
	for _, want := range []string{">one controller at 20/s<", ">one controller at 1000/s, interval 1m<", ">4 shards at 1000/s, interval 1m: largest shard<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the legend lacks %q:\n%s", want, svg)
		}
	}
}

func TestControllerSVGWithoutPoints(t *testing.T) {
	r := controllerResults{Runs: []controllerRun{{Releases: 100, Error: "devcluster not ready after 5 minutes"}}}
	els := parseSVG(t, controllerSVG(r))
	n := 0
	for _, el := range els {
		if el.Attr["class"] == "point" {
			t.Errorf("a point in a plot of a failed run: %v", el)
		}
		if el.Text == "not measured" {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d panels say not measured, want 4", n)
	}
}

func TestRunPlotWritesBesideTheResults(t *testing.T) {
	dir := t.TempDir()
	data, err := json.Marshal(plotInput())
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "controller-fleet.json")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runPlot([]string{in}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "controller-fleet.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, controllerSVG(plotInput())) {
		t.Error("the plot written differs from the results' drawing")
	}
	if err := runPlot([]string{filepath.Join(dir, "none.json")}); err == nil {
		t.Error("a missing results file was plotted")
	}
	if err := os.WriteFile(in, []byte(`{"runs": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runPlot([]string{in}); err == nil {
		t.Error("results without runs were plotted")
	}
}

func TestNumberText(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 5: "5", 0.5: "0.5", 0.25: "0.25", 1000: "1,000", 10000: "10,000", 1e6: "1,000,000", 123.4: "123.4", 0.001: "0.001"} {
		if got := numberText(v); got != want {
			t.Errorf("numberText(%v) = %q, want %q", v, got, want)
		}
	}
}

// FuzzControllerPlot feeds the plot's parse of a results file anything: what parses draws a
// well-formed SVG, the same bytes each time.
func FuzzControllerPlot(f *testing.F) {
	// Small seeds: the fuzzer minimizes every input that finds new code, a byte at a time, and
	// the results files of real runs are tens of kilobytes.
	data, err := json.Marshal(plotInput())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"runs":[{"releases":1,"ready_seconds":1e-300,"requests":1}],"fleet":[{"kind":"x","releases":-5,"ready_seconds":3}]}`))
	f.Add([]byte(`{"label":"<&>\u0000","runs":[{"releases":9223372036854775807,"ready_seconds":1e308,"peak_rss_ready_bytes":-1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseControllerResults(data)
		if err != nil {
			return
		}
		svg := controllerSVG(r)
		parseSVG(t, svg)
		if !bytes.Equal(svg, controllerSVG(r)) {
			t.Error("two drawings of the same results differ")
		}
	})
}
