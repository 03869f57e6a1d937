package chart

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/berthdev/berth/internal/yamlbound"
)

// Bounds are what a chart may expand to before Helm's loader reads it, which holds every
// archive of it whole and expands every YAML alias.
type Bounds struct {
	// Content is what its archives may decompress to: the tar stream of the package and of
	// every archive in it that the loader loads (charts/*.tgz, at any depth), added up.
	Content int64
	// Aliases bounds what the aliases of each YAML file the loader parses (values.yaml,
	// Chart.yaml, Chart.lock, requirements.*) add once expanded.
	Aliases yamlbound.Limits
}

// LocalBounds are the bounds of a chart the CLI loads: generous, as Helm's loader allows 100
// MiB for each archive.
func LocalBounds() Bounds { return Bounds{Content: DefaultContentLimit, Aliases: yamlbound.Local} }

// Check checks the chart at p (a directory or a packaged chart) within b in one pass, holding
// none of it but the YAML file being checked: a *ContentSizeError when it expands past
// b.Content or nests archives deeper than MaxNesting, an *AliasError naming the first YAML file
// whose aliases add more than b.Aliases. A directory's content is that of the archives and YAML
// files under it (Helm's loader bounds its other files itself). What does not read as a chart is
// left to the loader to refuse; name says where the chart comes from (p when "").
func Check(name, p string, b Bounds) error {
	if name == "" {
		name = p
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil // the loader names it
	}
	if !info.IsDir() {
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		return CheckArchive(name, f, b)
	}
	w := newWalk(name, b)
	err = filepath.WalkDir(p, func(file string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(p, file)
		rel = filepath.ToSlash(rel)
		if !subchartArchive(rel) && !loaderParses(rel) {
			return nil
		}
		f, err := os.Open(file)
		if err != nil {
			return nil
		}
		defer f.Close()
		if subchartArchive(rel) {
			return w.archive(f, rel, rel+": ", 2)
		}
		return w.yaml(rel, &counted{r: f, w: w})
	})
	return w.refusal(err)
}

// CheckArchive is Check of a packaged chart read from r.
func CheckArchive(name string, r io.Reader, b Bounds) error {
	w := newWalk(name, b)
	return w.refusal(w.archive(r, "", "", 1))
}

// walk reads the archives of one chart, counting what they expand to, all levels added up,
// and checking the aliases of the YAML files in them.
type walk struct {
	name   string
	bounds Bounds
	// left is what may still be decompressed.
	left int64
	// at is the archive being read, for a *ContentSizeError.
	at string
	// unzip are the decompressors of each depth, reused from one archive to the next.
	unzip [MaxNesting + 1]*gzip.Reader
}

func newWalk(name string, b Bounds) *walk { return &walk{name: name, bounds: b, left: b.Content} }

// refusal is err when it refuses the chart, else nil: what does not read is the loader's.
func (w *walk) refusal(err error) error {
	if errors.As(err, new(*ContentSizeError)) || errors.As(err, new(*AliasError)) {
		return err
	}
	return nil
}

// gunzip is a decompressor of r at depth, reusing the depth's.
func (w *walk) gunzip(r io.Reader, depth int) (*gzip.Reader, error) {
	if zr := w.unzip[depth]; zr != nil {
		return zr, zr.Reset(r)
	}
	zr, err := gzip.NewReader(r)
	w.unzip[depth] = zr
	return zr, err
}

// archive reads the gzip of a tar r, depth archives deep: at is its path in the chart
// (charts/a.tgz/charts/b.tgz), files the prefix of its files' names in an *AliasError
// ("web/charts/b.tgz: "). It counts its tar stream, checks the YAML files the loader parses,
// and reads each subchart archive in it the same way.
func (w *walk) archive(r io.Reader, at, files string, depth int) error {
	if depth > MaxNesting {
		return &ContentSizeError{Name: w.name, Limit: w.bounds.Content, Path: at, Nesting: depth}
	}
	zr, err := w.gunzip(r, depth)
	if err != nil {
		return nil // not an archive: the loader says so
	}
	w.at = at
	tr := tar.NewReader(&counted{r: zr, w: w})
	for {
		hd, err := tr.Next()
		if err != nil {
			return w.refusal(err)
		}
		if !hd.FileInfo().Mode().IsRegular() {
			continue
		}
		// As Helm's loader: the first path element is the chart's directory.
		name := strings.ReplaceAll(hd.Name, "\\", "/")
		_, inChart, _ := strings.Cut(name, "/")
		switch inChart = path.Clean(inChart); {
		case subchartArchive(inChart):
			err = w.archive(tr, path.Join(at, inChart), files+path.Clean(strings.TrimPrefix(name, "/"))+": ", depth+1)
			w.at = at
		case loaderParses(name):
			err = w.yaml(files+path.Clean(strings.TrimPrefix(name, "/")), tr)
		}
		if err != nil {
			return err
		}
	}
}

// yaml checks the YAML file name, read from r whole, against the walk's alias bounds.
func (w *walk) yaml(name string, r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return w.refusal(err)
	}
	if err := yamlbound.Check(data, w.bounds.Aliases); err != nil {
		return &AliasError{Chart: w.name, File: name, Err: err}
	}
	return nil
}

// counted counts what r yields against w's bound.
type counted struct {
	r io.Reader
	w *walk
}

func (c *counted) Read(p []byte) (int, error) {
	w := c.w
	if w.left < 0 {
		return 0, &ContentSizeError{Name: w.name, Limit: w.bounds.Content, Path: w.at}
	}
	if int64(len(p)) > w.left+1 {
		p = p[:w.left+1]
	}
	n, err := c.r.Read(p)
	w.left -= int64(n)
	if w.left < 0 {
		return n, &ContentSizeError{Name: w.name, Limit: w.bounds.Content, Path: w.at}
	}
	return n, err
}
