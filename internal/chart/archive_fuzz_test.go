package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/allocs"
	"github.com/berthdev/berth/internal/yamlbound"
)

// tgz packs files (name, content, in order) as a packaged chart.
func tgz(t testing.TB, files ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for i := 0; i+1 < len(files); i += 2 {
		if err := tw.WriteHeader(&tar.Header{Name: files[i], Mode: 0o644, Size: int64(len(files[i+1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzChartArchive loads what a tenant can put in a ConfigMap or Secret, or serve as a chart:
// it fails with an error or loads a chart, and never panics.
func FuzzChartArchive(f *testing.F) {
	chartYAML := "apiVersion: v2\nname: web\nversion: 1.0.0\n"
	f.Add(tgz(f, "web/Chart.yaml", chartYAML, "web/values.yaml", "replicas: 1\n",
		"web/templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
	f.Add(tgz(f, "web/Chart.yaml", chartYAML+"dependencies:\n- name: db\n  version: 1.0.0\n",
		"web/charts/db/Chart.yaml", "apiVersion: v2\nname: db\nversion: 1.0.0\n"))
	f.Add(tgz(f, "web/Chart.yaml", "apiVersion: v1\nname: web\nversion: 1.0.0\n"))
	f.Add(tgz(f, "web/Chart.yaml", ": not yaml ["))
	f.Add(tgz(f, "../web/Chart.yaml", chartYAML))
	f.Add(tgz(f, "web/Chart.yaml", chartYAML, "web/values.schema.json", `{"type": "object"}`))
	f.Add([]byte("not gzip"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		ch, err := LoadArchive("fuzz", data, within(1<<20))
		if err == nil && (ch == nil || ch.Metadata == nil) {
			t.Fatal("a chart without metadata loaded")
		}
	})
}

// within are the bounds of content n with the CLI's alias limits.
func within(n int64) Bounds { return Bounds{Content: n, Aliases: yamlbound.Local} }

func TestCheckContentSize(t *testing.T) {
	small := tgz(t, "web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\n")
	if err := CheckArchive("small", bytes.NewReader(small), within(1<<20)); err != nil {
		t.Errorf("a small chart: %v", err)
	}
	zeros := tgz(t, "web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\n", "web/big", string(make([]byte, 8<<20)))
	err := CheckArchive("zeros", bytes.NewReader(zeros), within(4<<20))
	var tooLarge *ContentSizeError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != 4<<20 || tooLarge.Name != "zeros" {
		t.Errorf("an archive of %d bytes holding 8 MiB: got %v, want a ContentSizeError", len(zeros), err)
	}
	if err := CheckArchive("not gzip", strings.NewReader("x"), within(1)); err != nil {
		t.Errorf("not gzip: %v, want it left to the loader", err)
	}
}

// nested is a packaged chart of n subcharts (charts/sub-I.tgz), each of size bytes of zeros.
func nested(t testing.TB, n, size int) []byte {
	t.Helper()
	chartYAML := "apiVersion: v2\nname: web\nversion: 1.0.0\n"
	sub := string(tgz(t, "sub/Chart.yaml", "apiVersion: v2\nname: sub\nversion: 1.0.0\n", "sub/zeros", string(make([]byte, size))))
	files := []string{"web/Chart.yaml", chartYAML}
	for i := range n {
		files = append(files, fmt.Sprintf("web/charts/sub-%d.tgz", i), sub)
	}
	return tgz(t, files...)
}

// TestCheckContentSizeCountsSubcharts: the archives a chart holds count, all levels added up:
// eight subcharts of 8 MiB of zeros, in a package of a few KiB, pass a limit of 32 MiB, while
// reading them allocates a few KiB; a chart whose subcharts fit passes, as does one that loads.
func TestCheckContentSizeCountsSubcharts(t *testing.T) {
	bomb := nested(t, 8, 8<<20)
	var err error
	allocated := allocs.Of(func() { err = CheckArchive("ConfigMap/ns/web key chart.tgz", bytes.NewReader(bomb), within(32<<20)) })
	var tooLarge *ContentSizeError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != 32<<20 || !strings.HasPrefix(tooLarge.Path, "charts/sub-") {
		t.Fatalf("a package of %d bytes holding 64 MiB in subcharts: got %v, want a ContentSizeError in a subchart", len(bomb), err)
	}
	if msg := err.Error(); !strings.Contains(msg, "ConfigMap/ns/web key chart.tgz") || !strings.Contains(msg, "more than 33554432 bytes once decompressed") {
		t.Errorf("message %q does not name the chart and the limit", msg)
	}
	if allocated > 2<<20 {
		t.Errorf("checking allocated %d bytes", allocated)
	}
	small := nested(t, 2, 1<<20)
	if err := CheckArchive("small", bytes.NewReader(small), within(4<<20)); err != nil {
		t.Errorf("two subcharts of 1 MiB within 4 MiB: %v", err)
	}
	if _, err := LoadArchive("small", small, within(4<<20)); err != nil {
		t.Errorf("load two subcharts of 1 MiB within 4 MiB: %v", err)
	}
	if _, err := LoadArchive("bomb", bomb, within(32<<20)); !errors.As(err, &tooLarge) {
		t.Errorf("LoadArchive of the bomb: %v, want a ContentSizeError", err)
	}
	deep := tgz(t, "c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n")
	for range MaxNesting + 1 {
		deep = tgz(t, "c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n", "c/charts/c.tgz", string(deep))
	}
	if err := CheckArchive("deep", bytes.NewReader(deep), within(32<<20)); !errors.As(err, &tooLarge) || tooLarge.Nesting == 0 {
		t.Errorf("archives %d deep: %v, want a ContentSizeError of nesting", MaxNesting+2, err)
	}
}
