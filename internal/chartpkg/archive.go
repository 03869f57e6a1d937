package chartpkg

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// chartFiles returns the Chart.yaml of ch and of each of its subcharts, as loaded, by the path
// Helm's chartutil.Save gives it in the archive (NAME/Chart.yaml, NAME/charts/SUB/Chart.yaml,
// ...).
func chartFiles(ch *chartv2.Chart) map[string][]byte {
	out := map[string][]byte{}
	var walk func(c *chartv2.Chart, prefix string)
	walk = func(c *chartv2.Chart, prefix string) {
		base := path.Join(prefix, c.Name())
		for _, f := range c.Raw {
			if f.Name == chartutil.ChartfileName {
				out[path.Join(base, chartutil.ChartfileName)] = f.Data
			}
		}
		for _, sub := range c.Dependencies() {
			walk(sub, path.Join(base, chartutil.ChartsDir))
		}
	}
	walk(ch, "")
	return out
}

// rewriteArchive copies the chart archive src to dst with the files of replace, by path in the
// archive, in place of the archive's own; everything else (the gzip header Helm writes, the
// order of entries, their modes and times) is copied as it is.
func rewriteArchive(src, dst string, replace map[string][]byte) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		return fmt.Errorf("read %s: %w", src, err)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	zw := gzip.NewWriter(out)
	zw.Header = zr.Header
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", src, err)
		}
		body, ok := replace[h.Name]
		if !ok {
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if _, err := io.Copy(tw, tr); err != nil {
				return err
			}
			continue
		}
		h.Size = int64(len(body))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}
