// Package waves decides what a Rollout does next: which clusters it moves to its target, which
// it rolls back, and what each wave and cluster is, from what their Releases say. It is pure:
// the controller reads the Releases, asks Decide, and writes what it answers.
package waves

import (
	"slices"
	"time"
)

// State is what a cluster, or a wave, is.
type State string

const (
	// Pending: not moved to the target yet.
	Pending State = "Pending"
	// Progressing: moved, its Release not Ready yet (or still in its watch window).
	Progressing State = "Progressing"
	// Ready: Ready for the target, through its watch window.
	Ready State = "Ready"
	// Waiting: moved, and its Release waits for something outside it (its cluster does not
	// answer, an input is missing); past the timeout it is Failed.
	Waiting State = "Waiting"
	// Failed: its Release failed or degraded for the target.
	Failed State = "Failed"
	// RollingBack and RolledBack: asked to roll back to its previous revision, and done.
	RollingBack State = "RollingBack"
	RolledBack  State = "RolledBack"

	// The states of a wave beside those: it waits for a person's approval, or for the pause
	// after the wave before it; it is Done, or Halted (one of its clusters failed).
	AwaitingApproval State = "AwaitingApproval"
	Pausing          State = "Pausing"
	Done             State = "Done"
	Halted           State = "Halted"
)

// Observed is what a cluster's Release says.
type Observed struct {
	// Exists: the Release is there.
	Exists bool
	// Target is the target its spec was written for ("" for none).
	Target string
	// RollbackTo is the revision its spec asks to be rolled back to; 0 when none.
	RollbackTo int
	// Current: its status is of its spec's generation.
	Current bool
	// Ready, Reconciling: its conditions; Reason, Message and Since are its Ready condition's.
	Ready, Reconciling bool
	Reason, Message    string
	Since              time.Time
	// Revision is the release's revision its status says.
	Revision int
}

// Cluster is one cluster of a wave.
type Cluster struct {
	Name     string
	Observed Observed
	// PreviousRevision is the revision the rollout recorded before it moved the cluster to the
	// target; 0 when it had none (nothing to roll back to).
	PreviousRevision int
}

// Wave is a wave of clusters, with its rules.
type Wave struct {
	Name string
	// MaxParallel is how many clusters may change at once; 0 is all.
	MaxParallel int
	// Pause is how long the next wave waits once this one is done.
	Pause time.Duration
	// Approval: the wave starts only once Input.Approved names it.
	Approval bool
	Clusters []Cluster
}

// Remediation is what a failure does to the clusters already moved.
type Remediation string

const (
	Rollback Remediation = "Rollback"
	Halt     Remediation = "Halt"
)

// Input is what a Rollout asks and what its Releases say.
type Input struct {
	// Target is the digest of what the clusters are moved to.
	Target string
	Waves  []Wave
	// Approved is the approval the Rollout carries: WAVE@TARGET (ApprovalFor).
	Approved string
	// Paused: no cluster is moved.
	Paused      bool
	Remediation Remediation
	// Failure is the failure the rollout halted for, kept from before, if it halted for
	// Target: a rollout that halted stays halted until its target changes.
	Failure *Failure
	// Timeout is how long a cluster may wait (Waiting) before it counts as failed.
	Timeout time.Duration
	Now     time.Time
}

// Ref is a cluster of a wave, by index.
type Ref struct{ Wave, Cluster int }

// Failure is the cluster a rollout halted for.
type Failure struct {
	Ref
	Reason, Message string
}

// Plan is what to do, and what each wave and cluster is.
type Plan struct {
	// Move are the clusters to move to the target now, in order.
	Move []Ref
	// RollBack are the clusters to ask to roll back to their PreviousRevision now.
	RollBack []Ref
	// Waves are the states of the waves, and Clusters of their clusters.
	Waves    []State
	Clusters [][]State
	// Current is the wave under way or waiting to start; len(Waves) when every wave is done
	// (or the rollout halted before one started).
	Current int
	// Failure, when the rollout halted, is the cluster that failed.
	Failure *Failure
	// Complete: every cluster is Ready for the target. RolledBack: every cluster the rollout
	// moved and could roll back has been.
	Complete, RolledBack bool
	// Wait says what the rollout waits for when it moves nothing: WaitApproval, WaitPause,
	// WaitPaused, WaitOlder, or "" for its clusters.
	Wait Wait
	// After, when not 0, is how long until the wait ends by itself (a pause).
	After time.Duration
}

// Wait is what a rollout waits for.
type Wait string

const (
	WaitApproval Wait = "Approval"
	WaitPause    Wait = "Pause"
	WaitPaused   Wait = "Paused"
	// WaitOlder: clusters moved to an earlier target are still changing; a new target starts
	// once they end.
	WaitOlder Wait = "OlderTarget"
)

// ApprovalFor is the approval of wave for target: the wave's name and the first 12 characters
// of the target.
func ApprovalFor(wave, target string) string {
	return wave + "@" + target[:min(12, len(target))]
}

// waitingReasons are the reasons of a Release's Ready=False that wait for something outside
// the release rather than say it failed.
var waitingReasons = []string{
	"ClusterUnreachable", "KubeConfigMissing", "ValuesMissing", "ChartMissing", "CredentialsMissing",
	"ChartUnavailable", "DependencyNotReady", "Locked", "Progressing",
}

// stateOf is what cluster c is for target, at now, given timeout.
func stateOf(c Cluster, target string, timeout time.Duration, now time.Time) State {
	o := c.Observed
	switch {
	case !o.Exists || o.Target != target:
		return Pending
	case o.RollbackTo > 0 && o.Current && o.Ready && o.Revision > 0:
		return RolledBack
	case o.RollbackTo > 0:
		return RollingBack
	case !o.Current || o.Reconciling:
		return Progressing
	case o.Ready:
		return Ready
	case slices.Contains(waitingReasons, o.Reason):
		if timeout > 0 && !o.Since.IsZero() && now.Sub(o.Since) > timeout {
			return Failed
		}
		return Waiting
	}
	return Failed
}

// Decide is what the rollout in does next.
func Decide(in Input) Plan {
	p := Plan{Waves: make([]State, len(in.Waves)), Clusters: make([][]State, len(in.Waves)), Current: len(in.Waves)}
	failure := in.Failure
	for w, wave := range in.Waves {
		p.Clusters[w] = make([]State, len(wave.Clusters))
		for i, c := range wave.Clusters {
			s := stateOf(c, in.Target, in.Timeout, in.Now)
			p.Clusters[w][i] = s
			if s == Failed && failure == nil {
				failure = &Failure{Ref: Ref{w, i}, Reason: c.Observed.Reason, Message: c.Observed.Message}
			}
		}
	}
	if failure == nil {
		for w := range in.Waves {
			for _, s := range p.Clusters[w] {
				if s == RollingBack || s == RolledBack {
					// Rolled back for this target, with no failure kept: the rollout halted
					// before, whatever its status says now.
					failure = &Failure{Ref: Ref{w, -1}, Reason: "RolledBack", Message: "clusters were rolled back for this target"}
				}
			}
		}
	}
	if failure != nil {
		p.Failure = failure
		p.halt(in)
		return p
	}
	p.advance(in)
	return p
}

// advance moves the first wave that is not done, within its rules.
func (p *Plan) advance(in Input) {
	p.Current = len(in.Waves)
	for w := range in.Waves {
		if !all(p.Clusters[w], Ready) {
			p.Current = w
			break
		}
		p.Waves[w] = Done
	}
	for w := p.Current + 1; w < len(in.Waves); w++ {
		p.Waves[w] = Pending
	}
	if p.Current == len(in.Waves) {
		p.Complete = true
		return
	}
	w, wave := p.Current, in.Waves[p.Current]
	states := p.Clusters[w]
	started := slices.ContainsFunc(states, func(s State) bool { return s != Pending })
	p.Waves[w] = Progressing
	if !started {
		switch {
		case olderChanging(in):
			p.Wait = WaitOlder
			p.Waves[w] = Pending
			return
		case w > 0 && in.Waves[w-1].Pause > 0:
			if end := doneAt(in.Waves[w-1]).Add(in.Waves[w-1].Pause); in.Now.Before(end) {
				p.Wait, p.After, p.Waves[w] = WaitPause, end.Sub(in.Now), Pausing
				return
			}
		}
		if wave.Approval && in.Approved != ApprovalFor(wave.Name, in.Target) {
			p.Wait, p.Waves[w] = WaitApproval, AwaitingApproval
			return
		}
	}
	if in.Paused {
		p.Wait = WaitPaused
		return
	}
	slots := len(states)
	if wave.MaxParallel > 0 {
		slots = wave.MaxParallel
	}
	for _, s := range states {
		if s == Progressing || s == Waiting {
			slots--
		}
	}
	for i, s := range states {
		if slots <= 0 {
			break
		}
		if s == Pending {
			p.Move = append(p.Move, Ref{w, i})
			slots--
		}
	}
}

// halt stops the rollout for p.Failure: nothing moves; with remediation Rollback, the clusters
// moved to the target are rolled back, the newest wave first, a wave only once every one after
// it is rolled back.
func (p *Plan) halt(in Input) {
	for w := range in.Waves {
		switch {
		case w == p.Failure.Wave:
			p.Waves[w] = Halted
		case all(p.Clusters[w], Ready):
			p.Waves[w] = Done
		case all(p.Clusters[w], Pending):
			p.Waves[w] = Pending
		default:
			p.Waves[w] = Halted
		}
	}
	if in.Remediation == Halt {
		return
	}
	p.RolledBack = true
	for w := len(in.Waves) - 1; w >= 0; w-- {
		var undo []Ref
		pending := false
		for i, c := range in.Waves[w].Clusters {
			switch s := p.Clusters[w][i]; {
			case s == RollingBack:
				pending = true
			case s == Pending || s == RolledBack || c.PreviousRevision == 0:
				// Not moved, done, or nothing to return to.
			default:
				undo = append(undo, Ref{w, i})
			}
		}
		if len(undo) == 0 && !pending {
			if slices.Contains(p.Clusters[w], RolledBack) {
				p.Waves[w] = RolledBack
			}
			continue
		}
		p.RollBack, p.RolledBack, p.Waves[w] = undo, false, RollingBack
		return
	}
}

// olderChanging says a cluster moved to an earlier target is still changing.
func olderChanging(in Input) bool {
	for _, wave := range in.Waves {
		for _, c := range wave.Clusters {
			o := c.Observed
			if o.Exists && o.Target != in.Target && o.RollbackTo == 0 && (!o.Current || o.Reconciling) {
				return true
			}
		}
	}
	return false
}

// doneAt is when the last cluster of wave became Ready.
func doneAt(wave Wave) time.Time {
	var t time.Time
	for _, c := range wave.Clusters {
		if c.Observed.Since.After(t) {
			t = c.Observed.Since
		}
	}
	return t
}

// all says every state is s (true for none).
func all(states []State, s State) bool {
	for _, x := range states {
		if x != s {
			return false
		}
	}
	return true
}
