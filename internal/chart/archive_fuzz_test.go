package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"
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
		ch, err := LoadArchive("fuzz", data)
		if err == nil && (ch == nil || ch.Metadata == nil) {
			t.Fatal("a chart without metadata loaded")
		}
	})
}

func TestCheckContentSize(t *testing.T) {
	small := tgz(t, "web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\n")
	if err := CheckContentSize("small", bytes.NewReader(small), 1<<20); err != nil {
		t.Errorf("a small chart: %v", err)
	}
	zeros := tgz(t, "web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\n", "web/big", string(make([]byte, 8<<20)))
	err := CheckContentSize("zeros", bytes.NewReader(zeros), 4<<20)
	var tooLarge *ContentSizeError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != 4<<20 || tooLarge.Name != "zeros" {
		t.Errorf("an archive of %d bytes holding 8 MiB: got %v, want a ContentSizeError", len(zeros), err)
	}
	if err := CheckContentSize("not gzip", strings.NewReader("x"), 1); err != nil {
		t.Errorf("not gzip: %v, want it left to the loader", err)
	}
}
