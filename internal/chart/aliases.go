package chart

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/berthdev/berth/internal/yamlbound"
)

// AliasError is a YAML file of a chart, one that Helm's loader parses (values.yaml, Chart.yaml,
// Chart.lock, requirements.*), whose aliases would expand it past a limit, or which does not
// parse so that they cannot be counted. Err is a *yamlbound.ExpansionError, CycleError or
// SyntaxError; none quotes the file.
type AliasError struct {
	// Chart says where the chart comes from.
	Chart string
	// File is the file's path in the chart, through the packaged subcharts that hold it
	// ("web/charts/db-1.0.0.tgz: db/values.yaml").
	File string
	Err  error
}

func (e *AliasError) Error() string {
	return fmt.Sprintf("load chart %s: %s: %v", e.Chart, e.File, e.Err)
}

func (e *AliasError) Unwrap() error { return e.Err }

// MaxAliasCheckBytes bounds what CheckAliases decompresses of a packaged chart and the charts
// packaged inside it, all together: Helm's loader allows as much for one archive.
const MaxAliasCheckBytes = 100 << 20

// loaderParses says whether Helm's loader parses a file of this name as YAML when it is at the
// root of a chart. Files of these names elsewhere are checked too: it costs nothing when they
// hold no alias.
func loaderParses(name string) bool {
	switch path.Base(name) {
	case "Chart.yaml", "Chart.lock", "values.yaml", "requirements.yaml", "requirements.lock":
		return true
	}
	return false
}

// CheckAliases checks, before Helm's loader parses them, the YAML files of the chart at p (a
// directory or a packaged chart) and of every chart packaged inside it: an *AliasError names the
// first whose aliases add more than limits once expanded. What does not read as a chart is left
// to the loader to refuse; name says where the chart comes from (p when "").
func CheckAliases(name, p string, limits yamlbound.Limits) error {
	if name == "" {
		name = p
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil
	}
	if !info.IsDir() {
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		return CheckArchiveAliases(name, f, limits)
	}
	w := &aliasWalk{chart: name, limits: limits, left: MaxAliasCheckBytes}
	return filepath.WalkDir(p, func(file string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(p, file)
		f, err := os.Open(file)
		if err != nil {
			return nil
		}
		defer f.Close()
		return w.file(filepath.ToSlash(rel), f, 0)
	})
}

// CheckArchiveAliases is CheckAliases of a packaged chart read from r.
func CheckArchiveAliases(name string, r io.Reader, limits yamlbound.Limits) error {
	w := &aliasWalk{chart: name, limits: limits, left: MaxAliasCheckBytes}
	return w.archive("", r, 0)
}

// aliasWalk checks the files of one chart, counting what it decompresses.
type aliasWalk struct {
	chart  string
	limits yamlbound.Limits
	// left is what may still be decompressed.
	left int64
}

// archive checks the files of the packaged chart r, whose path (through the archives that hold
// it) is at, depth archives deep.
func (w *aliasWalk) archive(at string, r io.Reader, depth int) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil
	}
	defer zr.Close()
	tr := tar.NewReader(&budgetReader{r: zr, left: &w.left})
	for {
		hdr, err := tr.Next()
		if errors.Is(err, errBudget) {
			return &ContentSizeError{Name: w.chart, Limit: MaxAliasCheckBytes}
		}
		if err != nil {
			return nil
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		if err := w.file(at+path.Clean(strings.TrimPrefix(hdr.Name, "/")), tr, depth); err != nil {
			return err
		}
	}
}

// file checks the file name of a chart, read from r: a YAML file the loader parses, or a chart
// packaged in charts/.
func (w *aliasWalk) file(name string, r io.Reader, depth int) error {
	switch {
	case loaderParses(name):
		data, err := io.ReadAll(&budgetReader{r: r, left: &w.left})
		if errors.Is(err, errBudget) {
			return &ContentSizeError{Name: w.chart, Limit: MaxAliasCheckBytes}
		}
		if err != nil {
			return nil
		}
		if err := yamlbound.Check(data, w.limits); err != nil {
			return &AliasError{Chart: w.chart, File: name, Err: err}
		}
	case strings.HasSuffix(name, ".tgz") && strings.Contains("/"+name, "/charts/") && depth < MaxNesting: // deeper ones CheckContentSize refuses
		return w.archive(name+": ", r, depth+1)
	}
	return nil
}

// errBudget is what a budgetReader returns past its budget.
var errBudget = errors.New("past the bytes allowed")

// budgetReader reads r while *left allows, counting down what it reads.
type budgetReader struct {
	r    io.Reader
	left *int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if *b.left <= 0 {
		return 0, errBudget
	}
	if int64(len(p)) > *b.left {
		p = p[:*b.left+1]
	}
	n, err := b.r.Read(p)
	*b.left -= int64(n)
	if *b.left < 0 {
		return n, errBudget
	}
	return n, err
}
