package lifecycle

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// progressLine is one line of berth's plain progress output: a step and its reason, or an
// indented object line.
var progressLine = regexp.MustCompile(`^([a-z-]+(/\S+)?: .+|  \S+ \S.*)$`)

// TestProgressOutputOfConcurrentSteps installs many objects of one kind, which berth applies
// concurrently, with plain (unsynchronized) buffers as the command's streams, as any caller of
// cli.Run may pass: the progress must come out whole lines, and go test -race must find no race
// on the stream.
func TestProgressOutputOfConcurrentSteps(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	templates := map[string]string{}
	for i := range 20 {
		templates[fmt.Sprintf("templates/cm%d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm%d\n", i)
	}
	chart := berthtest.WriteChart(t, "many", templates)

	var out, errOut bytes.Buffer
	args := []string{"install", "many", chart, "--wait", "--kubeconfig", env.Kubeconfig, "-n", env.Namespace}
	if err := cli.Run(t.Context(), cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args); err != nil {
		t.Fatalf("berth %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	created := 0
	for _, line := range strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n") {
		if !progressLine.MatchString(line) {
			t.Errorf("garbled progress line %q", line)
		}
		if strings.HasSuffix(line, " created") {
			created++
		}
	}
	if created != 20 {
		t.Errorf("progress reports %d objects created, want 20:\n%s", created, errOut.String())
	}
}
