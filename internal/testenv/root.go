package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Module is the module path of the repository testenv belongs to.
const Module = "github.com/berthdev/berth"

// RepoRoot returns the root of the berth repository: the nearest directory,
// from the working directory up, whose go.mod declares Module.
func RepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	return findModuleRoot(wd, Module)
}

// findModuleRoot walks up from dir to the directory whose go.mod declares module.
func findModuleRoot(dir, module string) (string, error) {
	for d := dir; ; {
		path, err := modulePath(filepath.Join(d, "go.mod"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("find repository root: %w", err)
		}
		if path == module {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("find repository root: no go.mod for module %s in %s or its parents", module, dir)
		}
		d = parent
	}
}

// modulePath reads the module path declared in the go.mod file at path.
func modulePath(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(line, "module")
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		rest, _, _ = strings.Cut(rest, "//")
		rest = strings.TrimSpace(rest)
		if unquoted, err := strconv.Unquote(rest); err == nil {
			rest = unquoted
		}
		return rest, nil
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return "", nil
}
