package controller

import (
	"fmt"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/release"
)

// ReasonRolledBack is a Release held at an earlier revision by spec.rollbackTo, rolled back;
// ReasonRollbackFailed one whose rollback failed.
const (
	ReasonRolledBack     = "RolledBack"
	ReasonRollbackFailed = "RollbackFailed"
)

// rollbackDescription is the description of the revision a rollback asked by req records: what
// the release's history shows, and how the controller knows, from the record alone, that the
// rollback was done.
func rollbackDescription(req *v1alpha1.RollbackRequest) string {
	if req.Reason == "" {
		return fmt.Sprintf("Rollback to %d", req.Revision)
	}
	return fmt.Sprintf("Rollback to %d: %s", req.Revision, req.Reason)
}

// rolledBack says the release's newest record, last, is the rollback req asks for, deployed: it
// is held there, and nothing more is done.
func rolledBack(last *release.Release, req *v1alpha1.RollbackRequest) bool {
	return last != nil && last.Info != nil && last.Info.Status == release.StatusDeployed &&
		last.Info.Description == rollbackDescription(req)
}
