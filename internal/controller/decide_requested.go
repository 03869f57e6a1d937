package controller

import (
	"crypto/sha256"
	"encoding/hex"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/berthdev/berth/api/v1alpha1"
)

// reconcileRequest is the value of rel's annotation reconcile.berth.dev/requestedAt as the
// controller handles it: as written when it is at most v1alpha1.MaxReconcileRequestLength long,
// else "sha256:" and its digest, so that what the cache and the status keep of it is bounded.
func reconcileRequest(value string) string {
	if len(value) <= v1alpha1.MaxReconcileRequestLength {
		return value
	}
	sum := sha256.Sum256([]byte(value))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// takeRequest handles a reconcile request on rel not handled yet: it records its value in the
// status and, when rel's last install or upgrade failed, starts that attempt anew, its failures
// counted from zero, as a change of the spec would (the last attempt no longer is what is asked:
// statusAccount). A Release that is not failed is only reconciled. It says whether there was one.
func takeRequest(rel *v1alpha1.Release) bool {
	asked := rel.Annotations[v1alpha1.ReconcileRequestAnnotation]
	if asked == "" {
		return false
	}
	asked = reconcileRequest(asked)
	st := &rel.Status
	if asked == st.LastHandledReconcileAt {
		return false
	}
	st.LastHandledReconcileAt = asked
	reconciling := meta.FindStatusCondition(st.Conditions, ConditionReconciling) != nil
	if meta.IsStatusConditionFalse(st.Conditions, ConditionReady) && !reconciling {
		st.Failures = 0
		st.LastAttemptedChartVersion, st.LastAttemptedValuesDigest = "", ""
	}
	return true
}
