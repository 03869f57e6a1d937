// Command berth is a release manager for Kubernetes that deploys Helm charts.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/berthdev/berth/internal/cli"
)

func main() {
	// The first SIGINT or SIGTERM asks the operation under way to stop at its next safe point and
	// record where it stopped; a second one ends berth at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	writeProfiles := startProfiles()
	err := cli.Run(ctx, cli.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args[1:])
	stop()
	writeProfiles()
	os.Exit(cli.ExitCode(err))
}
