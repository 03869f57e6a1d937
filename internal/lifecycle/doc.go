// Package lifecycle carries out a release's operations — install, upgrade, rollback and
// uninstall — by joining the other packages: rendered charts, the release store, the plan and the
// engine. Each operation validates everything it can (ownership, a server-side dry run of every
// object that changes) before its first change to the cluster, records the revision in Helm's format, executes
// its plan and records the outcome.
//
// An operation runs in a session on its release (session.go): it takes the release's lease,
// journals every step under it (journal.go) so that another cannot run beside it and an
// interrupted one can be finished, and has one grace after its deadline to say what came of it.
// In the session, drive decides one action at a time: the release's State, read from its records
// and journal (an interrupted operation: interrupted.go), and Next, the Action that what is
// wanted of it calls for (state.go).
//
// Install, upgrade and rollback, and the finishing of an interrupted one, are one revision
// pipeline: the list of steps in pipeline.go, run in order by one loop (carryOut). Each
// operation only reads what its revision starts from (its read step: install.go, upgrade.go,
// rollback.go, recover.go); the other steps are the same for all:
//
//  1. read: the revision's number, what it replaces, what it is made of and its policy: what
//     its record says and how a failure is undone.
//  2. render: the chart rendered (render.go), or a recorded revision's contents, and the new
//     revision's pending record, made in one place (record.go) and written by the plan's first
//     step. A client dry run ends here.
//  3. namespace: an install's namespace, created when asked.
//  4. survey: the cluster before any change: the objects prepared, the live ones, the CRDs to
//     apply (crds.go), a server-side dry run of what changes, the immutable changes
//     (immutable.go) and ownership (survey.go).
//  5. plan: the object steps plan.Build orders, in the batches a chart declares (ordered.go),
//     within the record, hook, adopt and watch steps (steps.go).
//  6. preflight: berth doctor's checks of the plan's requests (preflight.go).
//  7. validate: what the dry run refused.
//  8. preview: a server dry run says what it would do (preview.go), and ends here.
//  9. execute: the plan through the engine (execute.go); runner.go runs the lifecycle's own
//     steps: records, hooks (hooks.go, hookerror.go), adoption, the namespace, the watch window
//     (--watch-for: the revision stays pending while its objects are watched; window.go says
//     what a journal's window is). A failure is recorded, what the operation created is deleted
//     (cleanup on fail) and the operation undone (rollback on failure, or a regression in the
//     watch window per its remediation), within what is left of its deadline and its grace
//     (undo.go).
//
// Uninstall (uninstall.go), berth test (releasetest.go) and Recover (recover.go), which finishes
// an interrupted operation through the same pipeline, are the other operations. deps.go holds
// what an operation is made with, options.go the options every operation shares.
package lifecycle
