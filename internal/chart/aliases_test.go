package chart

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/allocs"
	"github.com/berthdev/berth/internal/yamlbound"
)

// aliasBomb is a values file of some 100 KiB whose 200 aliases expand it to 20 MiB.
func aliasBomb() string {
	return "big: &big " + strings.Repeat("x", 100<<10) + "\nmany: [" + strings.Repeat("*big, ", 199) + "*big]\n"
}

func TestCheckArchiveAliasesNamed(t *testing.T) {
	chartYAML := "apiVersion: v2\nname: web\nversion: 1.0.0\n"
	anchored := "defaults: &d {cpu: 100m}\napi: {resources: *d}\nworker: {resources: *d}\n"
	db := tgz(t, "db/Chart.yaml", "apiVersion: v2\nname: db\nversion: 1.0.0\n", "db/values.yaml", aliasBomb())
	tests := []struct {
		name  string
		files []string
		file  string // the file an *AliasError names, "" for none
	}{
		{"plain", []string{"web/Chart.yaml", chartYAML, "web/values.yaml", "a: 1\n"}, ""},
		{"anchors of a real chart", []string{"web/Chart.yaml", chartYAML, "web/values.yaml", anchored}, ""},
		{"values", []string{"web/Chart.yaml", chartYAML, "web/values.yaml", aliasBomb()}, "web/values.yaml"},
		{"Chart.yaml", []string{"web/Chart.yaml", chartYAML + aliasBomb()}, "web/Chart.yaml"},
		{"Chart.lock", []string{"web/Chart.yaml", chartYAML, "web/Chart.lock", aliasBomb()}, "web/Chart.lock"},
		{"a subchart's values", []string{"web/Chart.yaml", chartYAML, "web/charts/db/values.yaml", aliasBomb()}, "web/charts/db/values.yaml"},
		{"a packaged subchart's values", []string{"web/Chart.yaml", chartYAML, "web/charts/db-1.0.0.tgz", string(db)}, "web/charts/db-1.0.0.tgz: db/values.yaml"},
		{"a template, left to the renderer", []string{"web/Chart.yaml", chartYAML, "web/templates/cm.yaml", aliasBomb()}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := tgz(t, tt.files...)
			err := CheckArchive("ConfigMap/team-a/web key chart.tgz", bytes.NewReader(data), Bounds{Content: DefaultContentLimit, Aliases: yamlbound.Tenant})
			if tt.file == "" {
				if err != nil {
					t.Fatalf("CheckArchive: %v", err)
				}
				return
			}
			var ae *AliasError
			if !errors.As(err, &ae) || ae.File != tt.file || !errors.As(err, new(*yamlbound.ExpansionError)) {
				t.Fatalf("CheckArchive: %v, want an *AliasError of %s", err, tt.file)
			}
			if strings.Contains(err.Error(), "xxxx") || !strings.Contains(err.Error(), "ConfigMap/team-a/web key chart.tgz") {
				t.Errorf("error %q: want the chart named and nothing of the file quoted", err)
			}
		})
	}
}

func TestLoadRefusesAliasesBeforeTheLoader(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"Chart.yaml":               "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"charts/db/Chart.yaml":     "apiVersion: v2\nname: db\nversion: 1.0.0\n",
		"charts/db/values.yaml":    aliasBomb(),
		"templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Check("", dir, Bounds{Content: DefaultContentLimit, Aliases: yamlbound.Tenant}); !errors.As(err, new(*AliasError)) {
		t.Errorf("Check of a directory: %v, want an *AliasError", err)
	}
	// The CLI's bound is far larger: 20 MiB passes it, 2,000 aliases of a MiB do not.
	if err := Check("", dir, LocalBounds()); err != nil {
		t.Errorf("Check at the local bound: %v", err)
	}
	huge := "big: &big " + strings.Repeat("x", 1<<20) + "\nmany: [" + strings.Repeat("*big, ", 1999) + "*big]\n"
	data := tgz(t, "web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\n", "web/values.yaml", huge)
	var err error
	alloc := allocs.Of(func() { _, err = LoadArchive("web.tgz", data, LocalBounds()) })
	if !errors.As(err, new(*AliasError)) {
		t.Errorf("LoadArchive: %v, want an *AliasError", err)
	}
	if alloc > 64<<20 {
		t.Errorf("LoadArchive refused a chart of 2 GiB of values having allocated %d MiB", alloc>>20)
	}
}

// FuzzCheckArchive checks what a tenant can put in a ConfigMap or serve as a chart: one check
// allocates a bounded multiple of what the archive holds within its content bound, whatever it
// expands to and whatever its aliases expand to.
func FuzzCheckArchive(f *testing.F) {
	chartYAML := "apiVersion: v2\nname: web\nversion: 1.0.0\n"
	f.Add(tgz(f, "web/Chart.yaml", chartYAML, "web/values.yaml", "a: &a [1, 2]\nb: *a\n"))
	f.Add(tgz(f, "web/Chart.yaml", chartYAML, "web/values.yaml", "a: &a [*a]\n"))
	f.Add(tgz(f, "web/Chart.yaml", chartYAML, "web/charts/db-1.0.0.tgz", string(tgz(f, "db/values.yaml", "a: &a x\nb: [*a, *a]\n"))))
	f.Add(nested(f, 2, 64<<10))
	f.Add(nested(f, 8, 4<<20))
	f.Add([]byte{0x1f, 0x8b, 0x08})
	f.Add([]byte("not gzip"))
	b := Bounds{Content: 1 << 20, Aliases: yamlbound.Limits{Nodes: 10_000, Bytes: 100_000}}
	f.Fuzz(func(t *testing.T, data []byte) {
		var err error
		alloc := allocs.Of(func() { err = CheckArchive("fuzz", bytes.NewReader(data), b) })
		// A gzip of n bytes holds at most some 1,032 n bytes, and the walk reads at most
		// b.Content; it keeps a decompressor for each depth, and reads each YAML file whole and
		// parses it.
		content := min(1032*int64(len(data))+64<<10, b.Content)
		if bound := 4<<20 + 300*content; alloc > bound {
			t.Fatalf("CheckArchive of %d bytes allocated %d bytes, more than %d (%v)", len(data), alloc, bound, err)
		}
		var ae *AliasError
		var cs *ContentSizeError
		if err != nil && !errors.As(err, &ae) && !errors.As(err, &cs) {
			t.Fatalf("CheckArchive: %T %v", err, err)
		}
	})
}
