package lifecycle

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/release"
)

// Install, upgrade and rollback are one pipeline (pipeline.go): each makes a pending revision
// (its record and objects) and carries it out the same way. An install is the replacement of
// nothing; an upgrade and a rollback replace the objects of the deployed and the last
// revisions. What differs between them is what they read first (their revisionOp's read step)
// and their policy: the revision's number and contents, what it supersedes, what its record
// says, and how a failure is undone.

// revision is what the pipeline carries out: the new revision's record, the revisions whose
// objects it replaces, and its objects.
type revision struct {
	// rel is the new revision, pending.
	rel *release.Release
	// recorded says rel is recorded already: an interrupted operation being finished.
	recorded bool
	// previous are the deployed and the last revision (either may be nil), whose objects the new
	// revision's replace; none for an install.
	previous []*release.Release
	// replaced is the uninstalled revision whose name an install takes (replace), marked
	// superseded once the new one is recorded; 0 for none.
	replaced int
	// crds are the objects of the charts' crds/ directories; objects are the release's own.
	crds, objects []*unstructured.Unstructured
}

// policy is how an operation carries its revision through the pipeline.
type policy struct {
	op release.Operation
	settings
	said descriptions
	// undo is what a failure does besides recording it.
	undo undo
}

// settings are what the operation's caller asked of how the revision is carried out.
type settings struct {
	wait          WaitOptions
	dryRun        DryRun
	noHooks       bool
	takeOwnership bool
	// crds says what is done with the revision's crds (the default: Helm's for the operation);
	// forceReplace replaces the objects whose changes the API server refuses as immutable.
	crds         CRDPolicy
	forceReplace bool
	// historyMax bounds the revisions kept once the new one is recorded; 0 keeps all.
	historyMax int
	// preview, when set with a server dry run, is filled with what the operation would do.
	preview *Preview
}

// descriptions are what the revision's record says at the end: on success, on failure (before
// the cause), and for a server and a client dry run (none: the pending record's).
type descriptions struct {
	success, failure, dryRun, clientDryRun string
}
