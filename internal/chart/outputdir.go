package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// sourceMarker starts each document of a rendered manifest.
const sourceMarker = "---\n# Source: "

// document is one template's output in a rendered manifest: the file it came from and its text.
type document struct{ name, content string }

// documents splits a manifest written as Helm writes it ("---\n# Source: NAME\nCONTENT\n" for
// each document) back into its documents, in order.
func documents(manifest string) []document {
	var docs []document
	for _, part := range strings.Split(manifest, sourceMarker)[1:] {
		name, content, _ := strings.Cut(part, "\n")
		docs = append(docs, document{name: name, content: strings.TrimSuffix(content, "\n")})
	}
	return docs
}

// writeFiles writes r as helm template --output-dir does and returns what helm template prints
// meanwhile: a "wrote PATH" line for each document written, then an empty manifest. The
// documents of one template go to one file (OutputDir/NAME, or OutputDir/RELEASE/NAME with
// UseReleaseName); the charts' CRDs (with IncludeCRDs) always go under OutputDir itself. A hook
// is appended to a file that already exists, as Helm does. ShowOnly finds nothing to show then.
func (r *Rendered) writeFiles(opts TemplateOptions) (string, error) {
	dir := opts.OutputDir
	if opts.UseReleaseName {
		dir = filepath.Join(dir, opts.Render.ReleaseName)
	}
	crds := 0
	if opts.Render.IncludeCRDs {
		crds = len(r.Chart.CRDObjects())
	}
	var out strings.Builder
	written := map[string]bool{}
	for i, doc := range documents(r.Manifest) {
		into := dir
		if i < crds {
			into = opts.OutputDir
		}
		if err := writeTemplateFile(&out, into, doc.name, doc.content, written[doc.name]); err != nil {
			return out.String(), err
		}
		written[doc.name] = true
	}
	for _, h := range r.templateHooks(opts.SkipTests, opts.NoHooks) {
		_, err := os.Stat(filepath.Join(dir, h.Path))
		if err := writeTemplateFile(&out, dir, h.Path, h.Manifest, err == nil); err != nil {
			return out.String(), err
		}
	}
	if len(opts.ShowOnly) > 0 {
		_, err := selectTemplates("", opts.ShowOnly)
		return out.String(), err
	}
	out.WriteString("\n") // the manifest, all of it written to files
	return out.String(), nil
}

// writeTemplateFile writes (or appends) one document to dir/name and says so on out.
func writeTemplateFile(out *strings.Builder, dir, name, content string, appendTo bool) error {
	path := dir + string(filepath.Separator) + name
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write template %s: %w", name, err)
	}
	var f *os.File
	var err error
	if appendTo {
		f, err = os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	} else {
		f, err = os.Create(path)
	}
	if err != nil {
		return fmt.Errorf("write template %s: %w", name, err)
	}
	_, err = fmt.Fprintf(f, "%s%s\n%s\n", sourceMarker, name, content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write template %s to %s: %w", name, path, err)
	}
	fmt.Fprintf(out, "wrote %s\n", path)
	return nil
}
