package source

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// cacheGuard remembers what was in some directories (Helm's repository and content caches) so
// that what a failed fetch wrote there can be taken back: the files and directories that were
// not there before, and the directories a MkdirAll made on the way to them.
type cacheGuard struct {
	roots   []string
	before  map[string]bool
	missing []string
}

func newCacheGuard(roots ...string) *cacheGuard {
	g := &cacheGuard{before: map[string]bool{}}
	for _, root := range roots {
		if root == "" || slices.Contains(g.roots, root) {
			continue
		}
		g.roots = append(g.roots, root)
		g.missing = append(g.missing, missingAncestors(root)...)
		g.walk(root, func(path string, _ fs.DirEntry) { g.before[path] = true })
	}
	return g
}

// undo removes what appeared under the roots since the guard was made, deepest first.
// Directories are removed only when empty.
func (g *cacheGuard) undo() {
	var files, dirs []string
	for _, root := range g.roots {
		g.walk(root, func(path string, d fs.DirEntry) {
			switch {
			case g.before[path]:
			case d.IsDir():
				dirs = append(dirs, path)
			default:
				files = append(files, path)
			}
		})
	}
	for _, f := range files {
		os.Remove(f)
	}
	dirs = append(dirs, g.missing...)
	slices.SortFunc(dirs, func(a, b string) int { return len(b) - len(a) })
	for _, d := range slices.Compact(dirs) {
		os.Remove(d)
	}
}

func (g *cacheGuard) walk(root string, fn func(string, fs.DirEntry)) {
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == root {
			return nil
		}
		fn(path, d)
		return nil
	})
}

// missingAncestors returns dir and those of its parents that do not exist.
func missingAncestors(dir string) []string {
	var out []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
			return out
		}
		out = append(out, d)
	}
}
