package controller

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller/status"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

// TestRecordTooLargeIsNeverRetried checks that a release refused for the size of its record is
// Stalled with reason RecordTooLarge and a message that names the size, and is not tried again
// whatever its retries, where another failure is.
func TestRecordTooLargeIsNeverRetried(t *testing.T) {
	t.Parallel()
	tooLarge := &lifecycle.RecordError{Release: "big", Revision: 2, Status: release.StatusPendingUpgrade,
		Err: &release.TooLargeError{Name: "big", Version: 2, Size: 21 << 20, Limit: release.MaxRecordSize, What: "record"}}
	for _, tc := range []struct {
		name        string
		err         error
		wantReason  string
		wantRetried bool
	}{
		{"too large", tooLarge, ReasonRecordTooLarge, false},
		{"too large, wrapped", fmt.Errorf("upgrade: %w", tooLarge), ReasonRecordTooLarge, false},
		{"other", errors.New("boom"), ReasonUpgradeFailed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
			rel.Status.Revision = 1
			deployed := lifecycle.State{Deployed: true}
			d := &desired{Interval: time.Hour, ValuesDigest: "v", Upgrade: v1alpha1.UpgradeSpec{OperationSpec: v1alpha1.OperationSpec{
				Retries: 3, RetryBackoff: &metav1.Duration{Duration: time.Second}}}}
			markReconciling(rel, "upgrade")
			startAttempt(rel, "1.0.0", "v")
			reason := reasonOf(tc.err, ReasonUpgradeFailed)
			if reason != tc.wantReason {
				t.Fatalf("reasonOf = %s, want %s", reason, tc.wantReason)
			}
			requeue := attemptFailed(rel, d, deployed, reason, tc.err)
			rel.Status.History = []v1alpha1.OperationRecord{{Operation: "upgrade", Outcome: "Failed", StartedAt: metav1.Now()}}
			stalled := meta.FindStatusCondition(rel.Status.Conditions, ConditionStalled)
			_, retried := retryWait(rel, d, deployed, time.Now().Add(time.Minute))
			if retried != tc.wantRetried || (stalled != nil) == tc.wantRetried {
				t.Fatalf("retried %v, Stalled %+v; want retried %v", retried, stalled, tc.wantRetried)
			}
			if tc.wantRetried {
				return
			}
			if requeue != d.Interval || stalled.Reason != ReasonRecordTooLarge || !strings.Contains(stalled.Message, "21.0 MiB") ||
				!strings.Contains(stalled.Message, "16.0 MiB") {
				t.Errorf("requeue %s, Stalled %+v; want after the interval, RecordTooLarge naming 21.0 MiB and 16.0 MiB", requeue, stalled)
			}
			if ready := meta.FindStatusCondition(rel.Status.Conditions, ConditionReady); ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != ReasonRecordTooLarge {
				t.Errorf("Ready %+v, want False with reason %s", ready, ReasonRecordTooLarge)
			}
			if account, _ := statusAccount(rel, deployed, d, "1.0.0", time.Now().Add(time.Hour)); account.Retry || !account.Attempted || !account.Failed {
				t.Errorf("the decision's account %+v: want a failed attempt, not retried", account)
			}
		})
	}
}

// TestFootprintNote checks what the Event of a large record says.
func TestFootprintNote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f     release.RecordFootprint
		moved []string
		want  []string
	}{
		{release.RecordFootprint{Bytes: 900 << 10}, nil, []string{"revision 4 takes 900 KiB, 87% of the 1.0 MiB one Secret holds"}},
		{release.RecordFootprint{Bytes: 2 << 10, PartBytes: 3 << 20, Parts: 3}, []string{"templates and files"},
			[]string{"takes 3.0 MiB, more than the 1.0 MiB", "chart's templates and files are kept in 3 parts", "16.0 MiB in all"}},
		{release.RecordFootprint{Bytes: 2 << 10, PartBytes: 3 << 20, Parts: 3}, []string{"templates and files", "manifest"},
			[]string{"chart's templates and files, and its manifest, are kept in 3 parts"}},
	} {
		note := footprintNote("web", 4, tc.f, tc.moved)
		for _, w := range tc.want {
			if !strings.Contains(note, w) {
				t.Errorf("note %q, want it to say %q", note, w)
			}
		}
		if len(note) > status.MaxEventNote {
			t.Errorf("note of %d bytes, more than an Event holds", len(note))
		}
	}
}
