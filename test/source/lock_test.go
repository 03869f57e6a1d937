package source

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/test/berthtest"
)

// TestConcurrentRepoAddWithHelm: berth and helm adding repositories at the same time take the
// same lock of repositories.yaml, so no addition is lost.
func TestConcurrentRepoAddWithHelm(t *testing.T) {
	berthtest.UseHelmHome(t)
	r := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, webCharts(t)...)
	const each = 4
	errs := make([]error, 2*each)
	var wg sync.WaitGroup
	for i := range each {
		wg.Go(func() {
			var out, errOut bytes.Buffer
			errs[i] = cli.Run(t.Context(), cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
				[]string{"repo", "add", fmt.Sprintf("berth-%d", i), r.URL})
		})
		wg.Go(func() {
			_, stderr, err := berthtest.RunHelmShared(t, "repo", "add", fmt.Sprintf("helm-%d", i), r.URL)
			if err != nil {
				errs[each+i] = fmt.Errorf("%w: %s", err, stderr)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("repo add %d: %v", i, err)
		}
	}
	got := strings.Fields(mustBerth(t, "repo", "list", "--no-headers"))
	var names []string
	for i, f := range got {
		if i%2 == 0 {
			names = append(names, f)
		}
	}
	slices.Sort(names)
	want := []string{"berth-0", "berth-1", "berth-2", "berth-3", "helm-0", "helm-1", "helm-2", "helm-3"}
	if !slices.Equal(names, want) {
		t.Errorf("repositories after concurrent adds: %v, want %v", names, want)
	}
}

// TestRepoAddPasswordStdin reads the password from stdin, as helm does.
func TestRepoAddPasswordStdin(t *testing.T) {
	berthtest.UseHelmHome(t)
	r := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{Username: "alice", Password: "s3cret"}, webCharts(t)...)
	runWithInput := func(in string, args ...string) error {
		var out, errOut bytes.Buffer
		return cli.Run(t.Context(), cli.Streams{In: strings.NewReader(in), Out: &out, ErrOut: &errOut}, args)
	}
	if err := runWithInput("", "repo", "add", "private", r.URL, "--username", "alice"); err == nil || !strings.Contains(err.Error(), "--password-stdin") {
		t.Errorf("repo add --username with no terminal: %v, want an error naming --password-stdin", err)
	}
	if err := runWithInput("s3cret\n", "repo", "add", "private", r.URL, "--username", "alice", "--password-stdin"); err != nil {
		t.Fatalf("repo add --password-stdin: %v", err)
	}
	if out := berthtest.MustHelmShared(t, "search", "repo", "private/web"); !strings.Contains(out, "private/web") {
		t.Errorf("helm search repo private/web after berth repo add --password-stdin:\n%s", out)
	}
}
