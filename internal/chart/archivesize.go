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
)

// DefaultContentLimit is what a chart the CLI loads may expand to, all its archives counted:
// generous, as Helm's loader allows 100 MiB for each archive.
const DefaultContentLimit = 256 << 20

// MaxNesting is how deep archives may be in a chart (charts/a.tgz holding charts/b.tgz is 2):
// Helm's loader loads each, and each being read takes a decompressor's memory.
const MaxNesting = 8

// ContentSizeError is a packaged chart whose content, once decompressed, is larger than a limit:
// its archive and every archive inside it that Helm's loader would load (charts/*.tgz, at any
// depth), added up.
type ContentSizeError struct {
	// Name says where the package comes from.
	Name  string
	Limit int64
	// Path is the archive inside it being read when the limit was passed, as
	// charts/a.tgz/charts/b.tgz; "" for the package itself.
	Path string
	// Nesting, when not 0, says that the archive at Path is nested deeper than MaxNesting, not
	// that the content is too large.
	Nesting int
}

func (e *ContentSizeError) Error() string {
	in := ""
	if e.Path != "" {
		in = " (while reading its subchart " + e.Path + ")"
	}
	if e.Nesting > 0 {
		return fmt.Sprintf("load chart %s: its subchart %s is an archive inside %d others, more than the %d allowed: flatten its charts/ directory",
			e.Name, e.Path, e.Nesting-1, MaxNesting)
	}
	return fmt.Sprintf("load chart %s: its content is more than %d bytes once decompressed%s, its subcharts' archives counted, more than the %d bytes allowed: make the chart smaller",
		e.Name, e.Limit, in, e.Limit)
}

// CheckContentSize reads the packaged chart r (a gzip of a tar) through, holding none of it,
// and returns a *ContentSizeError when its content is more than limit bytes once decompressed:
// the tar stream of the package and, added to it, that of each archive in it that Helm's loader
// would load again (charts/NAME.tgz, and charts/DIR/charts/NAME.tgz, at any depth). A small
// archive of much repeated content is refused before a loader holds any of it. What is not a
// gzip stream, or fails to read, is left to the loader to refuse.
func CheckContentSize(name string, r io.Reader, limit int64) error {
	c := &content{name: name, left: limit, limit: limit}
	err := c.archive(r, "", 1)
	if tooLarge := new(ContentSizeError); errors.As(err, &tooLarge) {
		return tooLarge
	}
	return nil
}

// CheckPath checks the chart at path within limit, as CheckContentSize: a packaged chart
// whole, a chart directory by the archives under its charts/ directory (Helm's loader bounds
// its plain files itself).
func CheckPath(path string, limit int64) error {
	fi, err := os.Stat(path)
	if err != nil {
		return nil // the loader names it
	}
	if !fi.IsDir() {
		f, err := os.Open(path)
		if err != nil {
			return nil
		}
		defer f.Close()
		return CheckContentSize(path, f, limit)
	}
	c := &content{name: path, left: limit, limit: limit}
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(path, p)
		if err != nil || d.IsDir() || !subchartArchive(filepath.ToSlash(rel)) {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		return c.archive(f, filepath.ToSlash(rel), 2)
	})
	if tooLarge := new(ContentSizeError); errors.As(err, &tooLarge) {
		return tooLarge
	}
	return nil
}

// content counts what the archives of one chart expand to, all levels added up.
type content struct {
	name        string
	left, limit int64
	// at is the archive being read, for errors.
	at string
	// unzip are the decompressors of each depth, reused from one archive to the next.
	unzip [MaxNesting + 1]*gzip.Reader
}

// gunzip is a decompressor of r at depth, reusing the depth's.
func (c *content) gunzip(r io.Reader, depth int) (*gzip.Reader, error) {
	if zr := c.unzip[depth]; zr != nil {
		return zr, zr.Reset(r)
	}
	zr, err := gzip.NewReader(r)
	c.unzip[depth] = zr
	return zr, err
}

// archive reads the gzip of a tar r, at path in the chart (depth deep), counting its tar
// stream and, through archive again, that of each subchart archive in it.
func (c *content) archive(r io.Reader, at string, depth int) error {
	if depth > MaxNesting {
		return &ContentSizeError{Name: c.name, Limit: c.limit, Path: at, Nesting: depth}
	}
	zr, err := c.gunzip(r, depth)
	if err != nil {
		return nil // not an archive: the loader says so
	}
	c.at = at
	tr := tar.NewReader(&counted{r: zr, c: c})
	for {
		hd, err := tr.Next()
		if err != nil {
			return c.tooLarge(err)
		}
		// As Helm's loader: the first path element is the chart's directory.
		_, inChart, _ := strings.Cut(strings.ReplaceAll(hd.Name, "\\", "/"), "/")
		if !hd.FileInfo().Mode().IsRegular() || !subchartArchive(path.Clean(inChart)) {
			continue
		}
		if err := c.archive(tr, path.Join(at, path.Clean(inChart)), depth+1); err != nil {
			return err
		}
		c.at = at
	}
}

// tooLarge is err when it stopped the count, else nil: what does not read is the loader's.
func (c *content) tooLarge(err error) error {
	if tooLarge := new(ContentSizeError); errors.As(err, &tooLarge) {
		return err
	}
	return nil
}

// subchartArchive says whether p, a path in a chart, is an archive Helm's loader loads as a
// subchart: charts/NAME.tgz, or one in a subchart directory (charts/DIR/charts/NAME.tgz).
func subchartArchive(p string) bool {
	parts := strings.Split(p, "/")
	if len(parts) < 2 || len(parts)%2 != 0 || !strings.HasSuffix(parts[len(parts)-1], ".tgz") {
		return false
	}
	for i := 0; i < len(parts); i += 2 {
		if parts[i] != "charts" {
			return false
		}
	}
	return true
}

// counted counts what r yields against c's limit.
type counted struct {
	r io.Reader
	c *content
}

func (w *counted) Read(p []byte) (int, error) {
	if w.c.left < 0 {
		return 0, &ContentSizeError{Name: w.c.name, Limit: w.c.limit, Path: w.c.at}
	}
	if int64(len(p)) > w.c.left+1 {
		p = p[:w.c.left+1]
	}
	n, err := w.r.Read(p)
	w.c.left -= int64(n)
	if w.c.left < 0 {
		return n, &ContentSizeError{Name: w.c.name, Limit: w.c.limit, Path: w.c.at}
	}
	return n, err
}
