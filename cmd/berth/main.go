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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Run(ctx, cli.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(cli.ExitCode(err))
}
