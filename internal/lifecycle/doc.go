// Package lifecycle carries out a release's operations — install, upgrade, rollback and
// uninstall — by joining the other packages: rendered charts, the release store, the plan and the
// engine. Each operation validates everything it can (ownership, a server-side dry run of every
// object) before its first change to the cluster, records the revision in Helm's format, executes
// its plan and records the outcome.
//
// Install, upgrade and rollback are one revision pipeline (revision.go); an install is the
// replacement of nothing. Its steps, and the file that holds each:
//
//  1. Decide: the release's State, read from its records and journal (an interrupted operation:
//     interrupted.go), and Next, the Action that what is wanted of it calls for (state.go).
//  2. Hold: the operation takes the release's lease and journals every step, so that another
//     cannot run beside it and an interrupted one can be finished (operation.go, lock.go,
//     journal.go).
//  3. Read first: each operation's policy reads what it starts from and chooses the new
//     revision's number, what it supersedes, what its record says and how a failure is undone
//     (install.go, upgrade.go, rollback.go).
//  4. Render the chart, or take the contents of a recorded revision (render.go).
//  5. Record: the new revision's pending record, made in one place (record.go) and written by
//     the plan's first step.
//  6. Survey the cluster before any change: the objects prepared, the live ones, the CRDs to
//     apply (crds.go), a server-side dry run of what changes, the immutable changes
//     (immutable.go) and ownership (survey.go).
//  7. Plan: the object steps plan.Build orders, in the batches a chart declares (ordered.go),
//     within the record, hook, adopt and watch steps (steps.go); berth doctor's checks of the
//     plan's requests before its first change (preflight.go).
//  8. Execute the plan through the engine (execute.go); runner.go runs the lifecycle's own
//     steps: records, hooks (hooks.go, hookerror.go), adoption, the namespace, the watch window
//     (--watch-for: the revision stays pending while its objects are watched; window.go says
//     what a journal's window is). A server dry run says instead what it would do (preview.go).
//  9. Undo: a failure is recorded, what the operation created is deleted (cleanup on fail) and
//     the operation undone (rollback on failure, or a regression in the watch window per its
//     remediation), within what is left of its deadline and its grace (undo.go).
//
// Uninstall (uninstall.go), berth test (releasetest.go) and Recover (recover.go), which finishes
// an interrupted operation through the same pipeline, are the other operations. deps.go holds
// what an operation is made with, options.go the options every operation shares.
package lifecycle
