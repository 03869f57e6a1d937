package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/lifecycle"
)

// releasedUnsaid says whether the last revision, deployed, is what the Release's last attempt
// released, though the status does not say so: the controller stopped between recording the
// revision and writing the status. Releasing again would make another revision of the same
// chart and values.
func releasedUnsaid(rel *v1alpha1.Release, last *recorded, chartVersion string, d *desired) bool {
	st := rel.Status
	return last != nil && last.Exists && last.Deployed && last.Version != st.Revision &&
		meta.FindStatusCondition(st.Conditions, ConditionReconciling) != nil &&
		st.LastAttemptedGeneration == rel.Generation && st.LastAttemptedChartVersion == chartVersion &&
		st.LastAttemptedValuesDigest == d.ValuesDigest && lifecycle.Releases(last.Record, chartVersion, d.Values)
}
