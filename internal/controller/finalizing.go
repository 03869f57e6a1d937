package controller

import (
	"context"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

// finalizing is what the finalizer of rel, a Release being deleted, does with its release name in
// state s, as lifecycle.Next decides it for an uninstall asked with the Release's account:
// lifecycle.ActLetGo when there is nothing to uninstall, otherwise the actions lifecycle's
// Uninstall carries out. A release with no revision recorded is weighed with what an operation
// killed at its very end may have left (its lease, its journal, an incomplete first record): when
// that cannot be told, it counts as left, and the uninstall finds out.
func finalizing(ctx context.Context, deps lifecycle.Deps, rel *v1alpha1.Release, name string, s lifecycle.State) ([]lifecycle.Action, error) {
	if s.Status() == lifecycle.StatusMissing {
		left, err := lifecycle.LeftBehind(ctx, deps, name)
		s.LeftBehind = left || err != nil
	}
	return lifecycle.Next(s, lifecycle.Wanted{Operation: release.OpUninstall, Account: &lifecycle.Account{Revision: rel.Status.Revision}})
}

// letsGo says acts, as finalizing decided them, let the release go.
func letsGo(acts []lifecycle.Action) bool {
	return len(acts) == 1 && acts[0] == lifecycle.ActLetGo
}
