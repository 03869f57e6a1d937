package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
)

// lockStub is a leader election lock whose writes succeed or fail as told: leadership's rule is
// pure, and what it wraps is leader election's.
type lockStub struct {
	resourcelock.Interface
	fail error
}

func (l *lockStub) Create(context.Context, resourcelock.LeaderElectionRecord) error { return l.fail }
func (l *lockStub) Update(context.Context, resourcelock.LeaderElectionRecord) error { return l.fail }
func (l *lockStub) Identity() string                                                { return "me" }

// TestLeadership: the controller leads from a renewal that names it until the renew deadline
// after it, and no longer once another renewal failed past it or it gave the Lease up.
func TestLeadership(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	mine := resourcelock.LeaderElectionRecord{HolderIdentity: "me"}
	tests := []struct {
		name   string
		writes func(*leadership, *lockStub)
		after  time.Duration
		want   bool
	}{
		{"never elected", func(*leadership, *lockStub) {}, 0, false},
		{"acquired", func(l *leadership, _ *lockStub) { _ = l.Create(context.Background(), mine) }, 0, true},
		{"renewed within the deadline", func(l *leadership, _ *lockStub) { _ = l.Update(context.Background(), mine) }, leaderRenewDeadline - time.Second, true},
		{"not renewed by the deadline", func(l *leadership, _ *lockStub) { _ = l.Update(context.Background(), mine) }, leaderRenewDeadline, false},
		{"renewals failing past the deadline", func(l *leadership, s *lockStub) {
			_ = l.Update(context.Background(), mine)
			s.fail = errors.New("the API server did not answer")
			_ = l.Update(context.Background(), mine)
		}, leaderRenewDeadline + time.Second, false},
		{"given up", func(l *leadership, _ *lockStub) {
			_ = l.Update(context.Background(), mine)
			_ = l.Update(context.Background(), resourcelock.LeaderElectionRecord{})
		}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now = time.Unix(1000, 0)
			stub := &lockStub{}
			l := newLeadership(stub, leaderRenewDeadline, clock)
			tt.writes(l, stub)
			now = now.Add(tt.after)
			if got := l.Leads(); got != tt.want {
				t.Errorf("Leads = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNoStatusWithoutTheLead: a controller that lost its election writes no status, even one
// that differs from what was read; its client is never called.
func TestNoStatusWithoutTheLead(t *testing.T) {
	var unused client.Client // nil: any write would panic
	r := &Reconciler{Client: unused, Leading: func() bool { return false }}
	orig := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team"}}
	rel := orig.DeepCopy()
	markFailed(rel, ReasonInstallFailed, errors.New("timed out"), false)
	if err := r.patchStatus(context.Background(), orig, rel); err != nil {
		t.Fatalf("patchStatus = %v, want nothing written and no error", err)
	}
}
