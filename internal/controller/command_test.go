package controller_test

import (
	"context"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestControllerCommand runs `berth controller` as a user does, against a kubeconfig, until a
// Release is installed.
func TestControllerCommand(t *testing.T) {
	env := testenv.New(t)
	installCRD(t, env)
	c := startClient(t, env)
	deployer(t, env, "deployer")
	if err := c.Create(t.Context(), smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, webChart(t)), "deployer")); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	var stderr berthtest.LockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- cli.Run(ctx, cli.Streams{In: strings.NewReader(""), Out: &stderr, ErrOut: &stderr}, []string{
			"controller", "--kubeconfig", env.Kubeconfig, "-n", env.Namespace,
			"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--concurrency", "2",
		})
	}()
	got := waitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))
	cancel()
	if err := <-done; err != nil {
		t.Errorf("berth controller: %v\n%s", err, stderr.String())
	}
	assertReplicas(t, env, "2")

	// Another controller uninstalls it.
	runController(t, env)
	deleteRelease(t, c, got)
	berthtest.AssertNoRecords(t, env)
}
