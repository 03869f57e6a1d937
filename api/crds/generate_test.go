package crds_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/api/crds"
	"github.com/berthdev/berth/internal/testenv"
)

// TestGeneratedFilesAreCurrent regenerates the deep-copy functions and the CRD from the API's Go
// types with the controller-gen of the tools module and compares them with the files in the
// repository: a type changed without `make generate` fails here.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	gen := filepath.Join(t.TempDir(), "controller-gen")
	run(t, root, "go", "-C", "tools", "build", "-o", gen, "sigs.k8s.io/controller-tools/cmd/controller-gen")
	const paths = "paths=./api/..."

	deepcopy := run(t, root, gen, "object", paths, "output:object:stdout")
	want, err := os.ReadFile(filepath.Join(root, "api/v1alpha1/zz_generated.deepcopy.go"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), deepcopy); diff != "" {
		t.Errorf("zz_generated.deepcopy.go is stale: run make generate (-committed +generated):\n%s", diff)
	}

	crd := run(t, root, gen, "crd", paths, "output:crd:stdout")
	// On stdout each CRD starts with a document separator, as in its file.
	var committed []string
	for _, c := range crds.All() {
		committed = append(committed, strings.TrimSpace(string(c)))
	}
	if diff := cmp.Diff(strings.Join(committed, "\n"), strings.TrimSpace(crd)); diff != "" {
		t.Errorf("the CRDs in api/crds are stale: run make generate (-committed +generated):\n%s", diff)
	}
}

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}
