package waves

import (
	"testing"
	"time"
)

// FuzzDecide decides for rollouts made from the fuzzer's bytes (each byte a cluster: its wave,
// its state, whether it is at the target) and checks what must always hold: a cluster moves only
// in the current wave, within its maxParallel, never while paused or halted; rollbacks only after
// a failure, with remediation Rollback, within one wave, never a wave before one still to roll
// back.
func FuzzDecide(f *testing.F) {
	f.Add([]byte{0x01, 0x12, 0x23}, uint8(1), false, false)
	f.Add([]byte{0x00, 0x10, 0x15, 0x21, 0x33}, uint8(0), false, true)
	f.Add([]byte{0x02, 0x12, 0x14, 0x26}, uint8(2), true, false)
	f.Fuzz(func(t *testing.T, clusters []byte, maxParallel uint8, paused, halt bool) {
		if len(clusters) > 64 {
			clusters = clusters[:64]
		}
		states := []string{"none", "ready", "progressing", "failed", "unreachable", "rolling back", "rolled back"}
		in := Input{Target: target, Now: now, Paused: paused, Remediation: Rollback, Timeout: time.Minute}
		if halt {
			in.Remediation = Halt
		}
		for _, b := range clusters {
			w := int(b>>4) % 4
			for len(in.Waves) <= w {
				in.Waves = append(in.Waves, Wave{Name: string(rune('a' + len(in.Waves))), MaxParallel: int(maxParallel % 4)})
			}
			tgt := target
			if b&0x08 != 0 {
				tgt = "older"
			}
			in.Waves[w].Clusters = append(in.Waves[w].Clusters, at("c", tgt, states[int(b&0x07)%len(states)]))
		}
		p := Decide(in)
		if len(p.Waves) != len(in.Waves) {
			t.Fatalf("%d wave states for %d waves", len(p.Waves), len(in.Waves))
		}
		if len(p.Move) > 0 && (paused || p.Failure != nil) {
			t.Fatalf("moves %v while paused (%t) or halted (%+v)", p.Move, paused, p.Failure)
		}
		changing := 0
		for _, ref := range p.Move {
			if ref.Wave != p.Current {
				t.Fatalf("moves %v outside the current wave %d", ref, p.Current)
			}
			if p.Clusters[ref.Wave][ref.Cluster] != Pending {
				t.Fatalf("moves %v, which is %s", ref, p.Clusters[ref.Wave][ref.Cluster])
			}
		}
		if p.Current < len(in.Waves) {
			for _, s := range p.Clusters[p.Current] {
				if s == Progressing || s == Waiting {
					changing++
				}
			}
			if mp := in.Waves[p.Current].MaxParallel; mp > 0 && len(p.Move) > 0 && changing+len(p.Move) > mp {
				t.Fatalf("moves %d with %d changing, over maxParallel %d", len(p.Move), changing, mp)
			}
		}
		if len(p.RollBack) > 0 && (p.Failure == nil || in.Remediation != Rollback) {
			t.Fatalf("rolls back %v without a failure (%+v) or with remediation %s", p.RollBack, p.Failure, in.Remediation)
		}
		for _, ref := range p.RollBack {
			if ref.Wave != p.RollBack[0].Wave {
				t.Fatalf("rolls back %v across waves", p.RollBack)
			}
			for w := ref.Wave + 1; w < len(in.Waves); w++ {
				for _, s := range p.Clusters[w] {
					if s == RollingBack {
						t.Fatalf("rolls back wave %d while wave %d still rolls back", ref.Wave, w)
					}
				}
			}
		}
	})
}
