package lifecycle

import (
	"context"
	"errors"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// operation is one operation under way: the collaborators it was started with (Deps, which it
// never changes for its caller), its session on the release (session.go: its lease, fence, grace
// and journal), and what the operation itself learns as it goes: the runs it executed, the
// documents it parsed, what it went on without, the actions it took.
type operation struct {
	Deps
	session
	// runs collects the plans the operation executes.
	runs *runs
	// parsed holds the documents of the manifests the operation read (documents), each parsed
	// once: the rendered manifest's, when it rendered one.
	parsed *resource.Parsed
	// preflighted says the operation's preflight ran: it checks the operation's own plan, once,
	// and never an undo or the finishing of an interrupted operation.
	preflighted bool
	// acted are the actions the operation took, in order, as Next decided them (act).
	acted []Action
}

// act notes that the operation takes action a.
func (o *operation) act(a Action) { o.acted = append(o.acted, a) }

// revisionOperation does what w asks of release name, an install, upgrade, rollback or test:
// a dry run at once under the operation's deadline; otherwise holding the release's lease, with
// what an interrupted operation needs done first (see drive). do runs the action decided, and
// returns the revision it recorded (or would record); for Finish, the one finished. The
// preflight runs in do, once its plan is known, before its first change.
func (d Deps) revisionOperation(ctx context.Context, w Wanted, name string, wait WaitOptions, dryRun DryRun,
	do func(context.Context, *operation, Action) (*release.Release, error)) (*Result, error) {
	start := d.now()
	var o *operation
	var rel *release.Release
	var err error
	switch {
	case dryRun != NoDryRun:
		o = d.dryRun(name)
		dctx, cancel := wait.deadline(ctx)
		defer cancel()
		var s State
		var acts []Action
		if dryRun != ClientDryRun || w.Operation != release.OpInstall {
			// A client dry run of an install reads no cluster: it renders a first revision.
			s, err = o.readState(dctx, name)
		}
		if err == nil {
			acts, err = Next(s, w)
		}
		if err == nil && len(acts) > 0 {
			o.act(acts[len(acts)-1])
			rel, err = do(dctx, o, acts[len(acts)-1])
		}
	default:
		o = d.start(name, ctx)
		err = o.operate(ctx, wait, func(ctx context.Context) error {
			return o.drive(ctx, w, func(ctx context.Context, a Action, s State) error {
				var err error
				if a == ActFinish {
					rel = s.Interrupted.latest(ctx, o.Deps)
					return nil
				}
				rel, err = do(ctx, o, a)
				return err
			})
		})
	}
	var ni *NotInstalledError
	if errors.As(err, &ni) {
		ni.Release = name
	}
	return &Result{Release: rel, Runs: o.runs.all(), Plan: o.runs.planned, Actions: o.acted, Duration: d.now().Sub(start)}, err
}
