package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
)

// WindowOptions are how WatchWindow watches.
type WindowOptions struct {
	For, Tolerance time.Duration
	Restarts       int
	Readiness      readiness.Options
}

// RegressionError says an object of the release regressed in its watch window.
type RegressionError struct {
	Object resource.Identity
	Pod    *resource.Identity
	What   string
	Since  time.Time
	Report *PodReport
	Logs   map[string]string
}

func (e *RegressionError) Error() string {
	return fmt.Sprintf("%s: %s", e.Object, e.What)
}

// WatchWindow watches targets for opts.For.
func (c *Client) WatchWindow(ctx context.Context, targets []resource.Identity, opts WindowOptions, progress Progress) error {
	return errors.New("watch window: not available")
}
