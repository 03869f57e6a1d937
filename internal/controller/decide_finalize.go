package controller

import (
	"context"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

// farewell is the uninstall the finalizer of rel, a Release being deleted, asks: with the
// Release's account of its release, which names none when it never released one. stranded says
// the Release's ServiceAccount can no longer act, as its namespace is being deleted.
func farewell(rel *v1alpha1.Release, stranded bool) lifecycle.Wanted {
	return lifecycle.Wanted{Operation: release.OpUninstall, Account: &lifecycle.Account{
		Revision: rel.Status.Revision, NeverReleased: rel.Status.ReleaseName == "", Stranded: stranded,
	}}
}

// lettingGo says lifecycle.Next lets the release of rel go before its state is read: it never
// released one, or (stranded) no one may act for it any more.
func lettingGo(rel *v1alpha1.Release, stranded bool) bool {
	return letsGo(lifecycle.NextUnread(farewell(rel, stranded)))
}

// finalizing is what the finalizer of rel does with its release in state s, as lifecycle.Next
// decides it: lifecycle.ActLetGo when there is nothing to uninstall, otherwise the actions
// lifecycle's Uninstall carries out. A release with no revision recorded is weighed with what an
// operation killed at its very end may have left (its lease, its journal, an incomplete first
// record): when that cannot be told, it counts as left, and the uninstall finds out. The state
// returned says whether it was.
func finalizing(ctx context.Context, deps lifecycle.Deps, rel *v1alpha1.Release, s lifecycle.State) ([]lifecycle.Action, lifecycle.State, error) {
	if s.Status() == lifecycle.StatusMissing {
		left, err := lifecycle.LeftBehind(ctx, deps, rel.Status.ReleaseName)
		s.LeftBehind = left || err != nil
	}
	acts, err := lifecycle.Next(s, farewell(rel, false))
	return acts, s, err
}

// letsGo says acts, as Next decided them, let the release go.
func letsGo(acts []lifecycle.Action) bool {
	return len(acts) == 1 && acts[0] == lifecycle.ActLetGo
}
