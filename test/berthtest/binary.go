package berthtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/berthdev/berth/internal/testenv"
)

// BerthBinary builds the berth binary into a temporary directory, once per test binary, and
// returns its path: for the tests that run berth as a process of its own (berth controller, a
// command killed mid-operation).
var BerthBinary = sync.OnceValues(func() (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "berth-test-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "berth")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/berth")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/berth: %w\n%s", err, out)
	}
	return bin, nil
})
