// Package release keeps the record of each revision of a release in Helm's own storage format:
// Secrets named sh.helm.release.v1.NAME.vN of type helm.sh/release.v1, written and read by Helm's
// Secrets driver, so that Helm and berth read each other's releases.
package release

import (
	"errors"
	"fmt"

	"helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
)

// Release is one revision of a release, exactly as Helm records it.
type Release = releasev1.Release

// ApplyMethod is the apply method berth records on every revision: server-side apply, which is
// how berth applies, under the field manager Helm v4 applies with. A helm upgrade of the release
// then applies server-side under the same manager, without conflicts.
const ApplyMethod = string(releasev1.ApplyMethodServerSideApply)

// Info is the status part of a release record.
type Info = releasev1.Info

// Hook is a hook of a release as Helm records it.
type Hook = releasev1.Hook

// Status is the status of a release revision, with Helm's values.
type Status = common.Status

// The statuses a revision can have.
const (
	StatusUnknown         = common.StatusUnknown
	StatusDeployed        = common.StatusDeployed
	StatusUninstalled     = common.StatusUninstalled
	StatusSuperseded      = common.StatusSuperseded
	StatusFailed          = common.StatusFailed
	StatusUninstalling    = common.StatusUninstalling
	StatusPendingInstall  = common.StatusPendingInstall
	StatusPendingUpgrade  = common.StatusPendingUpgrade
	StatusPendingRollback = common.StatusPendingRollback
)

// Statuses lists every status Helm defines except unknown: the statuses Helm's list shows by default.
func Statuses() []Status {
	return []Status{
		StatusDeployed, StatusUninstalled, StatusUninstalling, StatusPendingInstall,
		StatusPendingUpgrade, StatusPendingRollback, StatusSuperseded, StatusFailed,
	}
}

var (
	// ErrNotFound is the cause of a NotFoundError for a missing release or revision. It is Helm's
	// driver.ErrReleaseNotFound, so errors.Is works with either.
	ErrNotFound = driver.ErrReleaseNotFound
	// ErrNoDeployed is the cause of a NotFoundError when a release has no deployed revision.
	ErrNoDeployed = driver.ErrNoDeployedReleases
	// ErrExists is returned when creating a revision that is already recorded.
	ErrExists = driver.ErrReleaseExists
)

// NotFoundError says which release, namespace and revision was looked for. Err is ErrNotFound or
// ErrNoDeployed.
type NotFoundError struct {
	Name      string
	Namespace string
	// Version is the revision looked for; 0 means any.
	Version int
	Err     error
}

func (e *NotFoundError) Error() string {
	if errors.Is(e.Err, ErrNoDeployed) {
		return fmt.Sprintf("release %q in namespace %q has no deployed revision", e.Name, e.Namespace)
	}
	if e.Version > 0 {
		return fmt.Sprintf("release: not found: %q revision %d in namespace %q", e.Name, e.Version, e.Namespace)
	}
	return fmt.Sprintf("release: not found: %q in namespace %q", e.Name, e.Namespace)
}

func (e *NotFoundError) Unwrap() error { return e.Err }

// Key is the name of the Secret that holds a revision: sh.helm.release.v1.NAME.vVERSION.
func Key(name string, version int) string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, version)
}
