package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/controller/status"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

// DegradedError is an install or upgrade that failed because its release regressed in its watch
// window (spec.install or spec.upgrade watchFor): Ready is False with reason Degraded, and its
// message names the object (and Pod) and what changed, and what was done about it. It says
// nothing of the Pod's logs, which the status shows only in status.blockers[].logTail.
type DegradedError struct {
	// Op is install or upgrade; Revision the revision that regressed.
	Op       string
	Release  string
	Revision int
	// Regression is what regressed.
	Regression *cluster.RegressionError
	// Undo says the operation was undone (rolled back, or an install uninstalled); UndoErr is
	// why that did not succeed, nil when it did.
	Undo    bool
	UndoErr error
	// Lost says the failure was neither recorded nor undone: another took the release.
	Lost bool
	// BackTo is the revision an upgrade was rolled back to, and Deployed the revision the
	// rollback recorded (0 when unknown).
	BackTo, Deployed int
	// Err is the operation's error.
	Err error
}

func (e *DegradedError) Error() string {
	what := fmt.Sprintf("revision %d of release %s degraded in its watch window: %s", e.Revision, e.Release, e.Regression.Error())
	switch {
	case e.Lost:
		return what + "; neither recorded nor undone: another took the release"
	case e.Undo && e.UndoErr != nil && e.Op == "install":
		return what + "; uninstalling it failed too: " + errorLine(e.UndoErr)
	case e.Undo && e.UndoErr != nil:
		return what + "; rolling back failed too: " + errorLine(e.UndoErr)
	case e.Undo && e.Op == "install":
		return what + "; uninstalled: the install was undone"
	case e.Undo && e.BackTo > 0 && e.Deployed > 0:
		return fmt.Sprintf("%s; rolled back: the release is back on revision %d (recorded as revision %d)", what, e.BackTo, e.Deployed)
	case e.Undo:
		return what + "; rolled back to the deployed revision"
	}
	return fmt.Sprintf("%s; recorded failed, and left as it is (no rollback)", what)
}

func (e *DegradedError) Unwrap() error { return e.Err }

func (e *DegradedError) conditionReason() string { return ReasonDegraded }

// regressionOf is the regression in the watch window that failed an operation (err), if one did.
func regressionOf(err error) *cluster.RegressionError {
	var re *cluster.RegressionError
	if errors.As(err, &re) {
		return re
	}
	return nil
}

// degraded is err, the error of install or upgrade op of rel, as a *DegradedError when a
// regression in the watch window failed it; err otherwise. After a rollback it reads the
// release's last record to say which revision is deployed, and rel's status then says that
// revision is (its chart and values are those it had: the rollback's are the revision's it
// rolled back to).
func (r *Reconciler) degraded(ctx context.Context, rel *v1alpha1.Release, clients *kube.Clients, name, op string, revision int, err error) error {
	re := regressionOf(err)
	if re == nil {
		return err
	}
	de := &DegradedError{Op: op, Release: name, Revision: revision, Regression: re, Err: err}
	var fe *lifecycle.FailedError
	if errors.As(err, &fe) {
		de.Revision = fe.Revision
		de.Undo, de.UndoErr, de.Lost = fe.Undo, fe.UndoErr, fe.Lost != nil
	}
	if !de.Undo || de.UndoErr != nil || op != "upgrade" {
		return de
	}
	de.BackTo = rel.Status.Revision
	state, rerr := r.lastRecord(ctx, clients, name)
	if last := state.Last; rerr == nil && last != nil && last.Info != nil && last.Info.Status == release.StatusDeployed && last.Version > de.Revision {
		de.Deployed = last.Version
		rel.Status.Revision = last.Version
	}
	return de
}

// degradedBlocker names what regressed: the object, the Pod and its state without its
// containers' messages; the Pod's state in full and the ends of its logs are its logTail,
// which status.Redact removes unless the controller may show them.
func degradedBlocker(re *cluster.RegressionError) v1alpha1.Blocker {
	b := v1alpha1.Blocker{
		Kind: "degraded", Object: re.Object.String(), Message: re.Error(),
		Next: "see why in the Pod's state and logs (kubectl logs --previous for a container that restarted), fix the chart or values, then change the Release; " +
			"or lengthen install/upgrade.watchTolerance or raise watchRestarts if this is expected",
	}
	if re.Report != nil {
		b.Message += status.LastPodState([]cluster.PodReport{*re.Report})
		b.LogTail = strings.Join(re.Detail(), "\n")
	}
	return b
}
