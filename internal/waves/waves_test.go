package waves

import (
	"slices"
	"testing"
	"time"
)

const target = "sha256:0123456789abcdef"

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// at is a cluster whose Release is at target t, in state s (a few words: "ready", "progressing",
// "failed", "unreachable", "rolling back", "rolled back", "none"), with previous revision 1.
func at(name, t, s string) Cluster {
	o := Observed{Exists: true, Target: t, Current: true, Revision: 2, Since: now.Add(-time.Hour)}
	switch s {
	case "none":
		o = Observed{}
	case "ready":
		o.Ready = true
	case "progressing":
		o.Reconciling = true
	case "failed":
		o.Reason, o.Message = "Degraded", "Deployment/web: 2 restarts in the watch window"
	case "unreachable":
		o.Reason = "ClusterUnreachable"
		o.Since = now.Add(-time.Minute)
	case "rolling back":
		o.RollbackTo, o.Reconciling = 1, true
	case "rolled back":
		o.RollbackTo, o.Ready, o.Revision = 1, true, 3
	}
	return Cluster{Name: name, Observed: o, PreviousRevision: 1}
}

func wave(name string, clusters ...Cluster) Wave { return Wave{Name: name, Clusters: clusters} }

func refs(rs ...Ref) []Ref { return rs }

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name         string
		in           Input
		move, undo   []Ref
		waves        []State
		wait         Wait
		complete     bool
		failed       *Ref
		rolledBack   bool
		afterAtLeast time.Duration
	}{
		{
			name:  "a new rollout moves the first wave only",
			in:    Input{Waves: []Wave{wave("canary", at("a", "", "none")), wave("rest", at("b", "", "none"), at("c", "", "none"))}},
			move:  refs(Ref{0, 0}),
			waves: []State{Progressing, Pending},
		},
		{
			name:  "the next wave starts when the one before is Ready",
			in:    Input{Waves: []Wave{wave("canary", at("a", target, "ready")), wave("rest", at("b", "old", "ready"), at("c", "", "none"))}},
			move:  refs(Ref{1, 0}, Ref{1, 1}),
			waves: []State{Done, Progressing},
		},
		{
			name:  "a wave under way moves nothing more until its clusters are done",
			in:    Input{Waves: []Wave{wave("canary", at("a", target, "progressing")), wave("rest", at("b", "old", "ready"))}},
			waves: []State{Progressing, Pending},
		},
		{
			name: "maxParallel bounds the clusters changing at once",
			in: Input{Waves: []Wave{{Name: "all", MaxParallel: 2, Clusters: []Cluster{
				at("a", target, "ready"), at("b", target, "progressing"), at("c", "old", "ready"), at("d", "old", "ready"),
			}}}},
			move:  refs(Ref{0, 2}),
			waves: []State{Progressing},
		},
		{
			name: "a wave waits for its approval",
			in: Input{Waves: []Wave{wave("canary", at("a", target, "ready")), {Name: "prod", Approval: true, Clusters: []Cluster{at("b", "old", "ready")}}},
				Approved: ApprovalFor("prod", "another-target")},
			waves: []State{Done, AwaitingApproval},
			wait:  WaitApproval,
		},
		{
			name: "and moves once approved for this target",
			in: Input{Waves: []Wave{wave("canary", at("a", target, "ready")), {Name: "prod", Approval: true, Clusters: []Cluster{at("b", "old", "ready")}}},
				Approved: ApprovalFor("prod", target)},
			move:  refs(Ref{1, 0}),
			waves: []State{Done, Progressing},
		},
		{
			name:         "the pause after a wave holds the next",
			in:           Input{Waves: []Wave{{Name: "canary", Pause: 2 * time.Hour, Clusters: []Cluster{at("a", target, "ready")}}, wave("rest", at("b", "old", "ready"))}},
			waves:        []State{Done, Pausing},
			wait:         WaitPause,
			afterAtLeast: time.Hour,
		},
		{
			name:  "paused, nothing moves",
			in:    Input{Paused: true, Waves: []Wave{wave("canary", at("a", "", "none"))}},
			waves: []State{Progressing},
			wait:  WaitPaused,
		},
		{
			name:  "a new target waits for clusters still changing for the old one",
			in:    Input{Waves: []Wave{wave("canary", at("a", "old", "ready")), wave("rest", at("b", "old", "progressing"))}},
			waves: []State{Pending, Pending},
			wait:  WaitOlder,
		},
		{
			name:  "an unreachable cluster holds its wave",
			in:    Input{Timeout: 5 * time.Minute, Waves: []Wave{wave("canary", at("a", target, "unreachable")), wave("rest", at("b", "old", "ready"))}},
			waves: []State{Progressing, Pending},
		},
		{
			name:   "past the timeout it halts the rollout",
			in:     Input{Timeout: 30 * time.Second, Remediation: Halt, Waves: []Wave{wave("canary", at("a", target, "unreachable")), wave("rest", at("b", "old", "ready"))}},
			waves:  []State{Halted, Pending},
			failed: &Ref{0, 0},
		},
		{
			name:     "every wave Ready is complete",
			in:       Input{Waves: []Wave{wave("canary", at("a", target, "ready")), wave("rest", at("b", target, "ready"))}},
			waves:    []State{Done, Done},
			complete: true,
		},
		{
			name: "a failure with Halt moves nothing and undoes nothing",
			in: Input{Remediation: Halt, Waves: []Wave{wave("one", at("a", target, "ready")),
				wave("two", at("b", target, "failed"), at("c", target, "ready")), wave("three", at("d", "old", "ready"))}},
			waves:  []State{Done, Halted, Pending},
			failed: &Ref{1, 0},
		},
		{
			name: "with Rollback the newest wave is rolled back first",
			in: Input{Remediation: Rollback, Waves: []Wave{wave("one", at("a", target, "ready")),
				wave("two", at("b", target, "failed"), at("c", target, "ready")), wave("three", at("d", "old", "ready"))}},
			undo:   refs(Ref{1, 0}, Ref{1, 1}),
			waves:  []State{Done, RollingBack, Pending},
			failed: &Ref{1, 0},
		},
		{
			name: "then the wave before it, once it is rolled back",
			in: Input{Remediation: Rollback, Failure: &Failure{Ref: Ref{1, 0}, Reason: "Degraded"}, Waves: []Wave{wave("one", at("a", target, "ready")),
				wave("two", at("b", target, "rolled back"), at("c", target, "rolled back")), wave("three", at("d", "old", "ready"))}},
			undo:   refs(Ref{0, 0}),
			waves:  []State{RollingBack, RolledBack, Pending},
			failed: &Ref{1, 0},
		},
		{
			name: "a rollback under way is waited for",
			in: Input{Remediation: Rollback, Failure: &Failure{Ref: Ref{1, 0}}, Waves: []Wave{wave("one", at("a", target, "ready")),
				wave("two", at("b", target, "rolling back"), at("c", target, "rolled back"))}},
			waves:  []State{Done, RollingBack},
			failed: &Ref{1, 0},
		},
		{
			name: "every moved cluster rolled back is RolledBack, and stays halted",
			in: Input{Remediation: Rollback, Failure: &Failure{Ref: Ref{1, 0}}, Waves: []Wave{wave("one", at("a", target, "rolled back")),
				wave("two", at("b", target, "rolled back")), wave("three", at("d", "old", "ready"))}},
			waves:      []State{RolledBack, RolledBack, Pending},
			failed:     &Ref{1, 0},
			rolledBack: true,
		},
		{
			name: "a cluster with no revision before is not rolled back",
			in: Input{Remediation: Rollback, Waves: []Wave{wave("one", func() Cluster {
				c := at("a", target, "failed")
				c.PreviousRevision = 0
				return c
			}())}},
			waves:      []State{Halted},
			failed:     &Ref{0, 0},
			rolledBack: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Target, tc.in.Now = target, now
			p := Decide(tc.in)
			if !slices.Equal(p.Move, tc.move) {
				t.Errorf("Move = %v, want %v", p.Move, tc.move)
			}
			if !slices.Equal(p.RollBack, tc.undo) {
				t.Errorf("RollBack = %v, want %v", p.RollBack, tc.undo)
			}
			if !slices.Equal(p.Waves, tc.waves) {
				t.Errorf("Waves = %v, want %v", p.Waves, tc.waves)
			}
			if p.Wait != tc.wait || p.Complete != tc.complete || p.RolledBack != tc.rolledBack {
				t.Errorf("Wait %q Complete %t RolledBack %t, want %q %t %t", p.Wait, p.Complete, p.RolledBack, tc.wait, tc.complete, tc.rolledBack)
			}
			switch {
			case tc.failed == nil && p.Failure != nil:
				t.Errorf("Failure = %+v, want none", p.Failure)
			case tc.failed != nil && (p.Failure == nil || p.Failure.Ref != *tc.failed):
				t.Errorf("Failure = %+v, want at %v", p.Failure, *tc.failed)
			}
			if p.After < tc.afterAtLeast {
				t.Errorf("After = %s, want at least %s", p.After, tc.afterAtLeast)
			}
		})
	}
}
