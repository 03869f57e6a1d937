package v1alpha1

// ReconcileRequestAnnotation on a Release asks the controller for one more attempt, without a
// change of its spec: any value it has not handled yet (status.lastHandledReconcileAt) starts a
// Release whose install or upgrade failed anew, its failures counted from zero. `berth reconcile
// release` sets it to the current time.
const ReconcileRequestAnnotation = "reconcile.berth.dev/requestedAt"

// MaxReconcileRequestLength is the longest value of ReconcileRequestAnnotation the controller
// reports as it is; a longer one is handled as the sha256 of it ("sha256:HEX").
const MaxReconcileRequestLength = 128
