package chart

import (
	"fmt"
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
