package controller

import (
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/release"
)

// Reasons of a release's record.
const (
	// ReasonRecordTooLarge: the release's record would take more than a record may
	// (release.MaxRecordSize in all), and the release was refused before anything changed. It is
	// not tried again until the chart or the values change.
	ReasonRecordTooLarge = "RecordTooLarge"
	// ReasonLargeRecord, of an Event: the deployed revision's record is kept in parts beside its
	// Secret, or fills most of its Secret.
	ReasonLargeRecord = "LargeRecord"
	// ReasonInvalidRecord: a record object of the release, its parts or its journal is not
	// read: it expands past the controller's limit once decompressed
	// (--record-expansion-limit), or its record is not the one its object's labels name. A
	// tenant may write any Secret of its namespace: such an object is input, named, never
	// trusted.
	ReasonInvalidRecord = "InvalidRecord"
)

// recordInvalid says err is a record, parts or journal that was not read, being invalid.
func recordInvalid(err error) bool {
	return errors.As(err, new(*release.ExpansionError)) || errors.As(err, new(*release.MismatchError))
}

// recordTooLarge says err is a release refused for the size of its record.
func recordTooLarge(err error) bool {
	var tooLarge *release.TooLargeError
	return errors.As(err, &tooLarge)
}

// retriedNever says that the failure rel's status reports is not tried again whatever the
// retries: the release's record would be refused the same way.
func retriedNever(rel *v1alpha1.Release) bool {
	c := meta.FindStatusCondition(rel.Status.Conditions, ConditionReady)
	return c != nil && c.Reason == ReasonRecordTooLarge
}

// recordFootprint says in rel's status what rec, the record of its deployed revision, takes,
// and records an Event when that is near what one Secret holds or beyond; nil rec (a revision
// another writer recorded) clears it. The footprint is rec encoded as the store encodes it: no
// request is made.
func (r *Reconciler) recordFootprint(rel *v1alpha1.Release, rec *release.Release) {
	rel.Status.Record = nil
	if rec == nil {
		return
	}
	f, moved, err := r.Encoder.Fork().FootprintOf(rec)
	if err != nil {
		return
	}
	rel.Status.Record = &v1alpha1.RecordFootprint{Bytes: int64(f.Size()), Parts: int32(f.Parts)}
	if f.Split() || f.Bytes >= nearObjectLimit {
		r.Recorder.Eventf(rel, nil, corev1.EventTypeNormal, ReasonLargeRecord, "record", "%s", footprintNote(rec.Name, rec.Version, f, moved))
	}
}

// nearObjectLimit is the size from which a record Secret is near the most one holds: 80% of it.
const nearObjectLimit = release.MaxObjectData * 8 / 10

// footprintNote says what the record of revision version of release name takes, when it is near
// what one Secret holds or beyond; moved is what moved to its parts.
func footprintNote(name string, version int, f release.RecordFootprint, moved []string) string {
	if f.Parts == 0 {
		return fmt.Sprintf("the record of release %s revision %d takes %s, %d%% of the %s one Secret holds: a larger record keeps its chart's templates and files in parts (Secrets of type %s) beside its Secret",
			name, version, release.Bytes(f.Size()), f.Bytes*100/release.MaxObjectData, release.Bytes(release.MaxObjectData), release.PartSecretType)
	}
	what := "chart's templates and files are"
	if slices.Contains(moved, "manifest") {
		what = "chart's templates and files, and its manifest, are"
	}
	return fmt.Sprintf("the record of release %s revision %d takes %s, more than the %s one Secret holds: its %s kept in %d parts (Secrets of type %s) beside its Secret; a record may take %s in all",
		name, version, release.Bytes(f.Size()), release.Bytes(release.MaxObjectData), what, f.Parts, release.PartSecretType,
		release.Bytes(release.MaxRecordSize))
}
