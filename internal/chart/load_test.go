package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

func TestLoad(t *testing.T) {
	dir, err := Load("testdata/app")
	if err != nil {
		t.Fatalf("Load directory: %v", err)
	}
	pkg, err := chartutil.Save(dir, t.TempDir())
	if err != nil {
		t.Fatalf("package chart: %v", err)
	}
	if !strings.HasSuffix(pkg, ".tgz") {
		t.Fatalf("packaged chart %s", pkg)
	}
	archived, err := Load(pkg)
	if err != nil {
		t.Fatalf("Load %s: %v", pkg, err)
	}
	if archived.Name() != "app" || len(archived.Dependencies()) != 1 || len(archived.CRDObjects()) != 1 {
		t.Errorf("packaged chart loaded as %s with %d subcharts and %d CRDs", archived.Name(), len(archived.Dependencies()), len(archived.CRDObjects()))
	}
}

func TestLoadErrors(t *testing.T) {
	empty := t.TempDir()
	notChart := filepath.Join(t.TempDir(), "notes.tgz")
	if err := os.WriteFile(notChart, []byte("not a tarball"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want []string
	}{
		{"nonexistent", "testdata/no-such-chart", []string{"testdata/no-such-chart", "no such file or directory", "chart directory or a packaged chart"}},
		{"directory without Chart.yaml", empty, []string{empty, "Chart.yaml"}},
		{"file that is not a chart", notChart, []string{notChart, "gzipped archive"}},
		{"missing dependency", "testdata/missingdep", []string{"testdata/missingdep", "missing in charts/ directory: absent", "helm dependency build"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.path)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
