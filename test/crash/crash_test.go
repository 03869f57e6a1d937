package crash

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/testenv"
)

// operation is one of the operations the suite kills.
type operation struct {
	name string
	// setup brings release rel to where the operation starts from.
	setup func(t *testing.T, env *testenv.Env, chart, rel string)
	// args is the operation's command line.
	args func(chart, rel string) []string
	// rerun is the follow-up that runs the operation again.
	rerun func(chart, rel string) []string
	// before and after are what of the chart is in the cluster before and after the operation.
	before, after content
}

var operations = []operation{
	{
		name:   "install",
		setup:  func(*testing.T, *testenv.Env, string, string) {},
		args:   func(chart, rel string) []string { return []string{"install", rel, chart} },
		rerun:  func(chart, rel string) []string { return []string{"upgrade", "--install", rel, chart} },
		before: "", after: "1",
	},
	{
		name: "upgrade",
		setup: func(t *testing.T, env *testenv.Env, chart, rel string) {
			mustBerth(t, env, "install", rel, chart)
		},
		args:   func(chart, rel string) []string { return []string{"upgrade", rel, chart, "--set", "version=2"} },
		rerun:  func(chart, rel string) []string { return []string{"upgrade", rel, chart, "--set", "version=2"} },
		before: "1", after: "2",
	},
	{
		name: "rollback",
		setup: func(t *testing.T, env *testenv.Env, chart, rel string) {
			mustBerth(t, env, "install", rel, chart)
			mustBerth(t, env, "upgrade", rel, chart, "--set", "version=2")
		},
		args:   func(chart, rel string) []string { return []string{"rollback", rel, "1"} },
		rerun:  func(chart, rel string) []string { return []string{"rollback", rel, "1"} },
		before: "2", after: "1",
	},
	{
		name: "uninstall",
		setup: func(t *testing.T, env *testenv.Env, chart, rel string) {
			mustBerth(t, env, "install", rel, chart)
		},
		args:   func(chart, rel string) []string { return []string{"uninstall", rel} },
		rerun:  func(chart, rel string) []string { return []string{"uninstall", rel} },
		before: "1", after: "",
	},
}

// followUps are the commands that may follow a kill: recover, the same operation again, and
// recover --rollback.
var followUps = []string{"recover", "rerun", "recover --rollback"}

// tally counts trials across the suite's parallel tests.
type tally struct {
	mu sync.Mutex
	// trials counts every trial, mid those killed mid-operation; converged counts the trials
	// killed mid-operation whose release converged (a kill after the operation ended proves
	// nothing); failures counts every trial whose release did not converge.
	trials, mid, converged, failures int
}

// add counts a trial: whether its kill landed mid-operation and whether the release converged.
func (s *tally) add(mid, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trials++
	if mid {
		s.mid++
		if ok {
			s.converged++
		}
	}
	if !ok {
		s.failures++
	}
}

// String is the suite's summary line.
func (s *tally) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("crash suite: %d trials, %d killed mid-operation, %d of those converged, %d failures", s.trials, s.mid, s.converged, s.failures)
}

// randomTrials is the number of random moments per operation: BERTH_CRASH_TRIALS, default 5.
func randomTrials(t *testing.T) int {
	s := os.Getenv("BERTH_CRASH_TRIALS")
	if s == "" {
		return 5
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		t.Fatalf("BERTH_CRASH_TRIALS=%q: want a number", s)
	}
	return n
}

// minRandomMid is how many of n kills at random moments must land mid-operation: all but one in
// five. A random moment is drawn within the operation and cut short before its last step, so
// only a kill that the operation outran in its last step (a few requests) misses.
func minRandomMid(n int) int { return n - n/5 }

// TestS6KilledAnywhereConverges kills berth after every journal write and at random moments of each operation, runs
// one follow-up command and checks that the release converged. Each kill counts as mid-operation
// only when berth was still running and the operation's journal was there, written by it: each
// kill after a journal write but the last (its deletion) must be, and all but one in five of the
// kills at random moments.
func TestS6KilledAnywhereConverges(t *testing.T) {
	var sum tally
	t.Cleanup(func() {
		line := sum.String()
		t.Log(line)
		fmt.Println(line)
		// go test hides a passing package's output; the Makefile prints this file after the run.
		if path := os.Getenv("BERTH_CRASH_SUMMARY"); path != "" {
			if err := os.WriteFile(path, []byte(line+"\n"), 0o644); err != nil {
				t.Errorf("write the summary: %v", err)
			}
		}
	})
	random := randomTrials(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("BERTH_CRASH_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("BERTH_CRASH_SEED=%q: want a number", s)
		}
		seed = n
	}
	t.Logf("seed %d (BERTH_CRASH_SEED=%d repeats these kill moments)", seed, seed)
	for k, op := range operations {
		t.Run(op.name, func(t *testing.T) {
			t.Parallel()
			rnd := rand.New(rand.NewPCG(seed, uint64(k)))
			env := testenv.New(t)
			chart := crashChart(t)
			trial := 0
			mid := func(rel string, r run) bool {
				t.Helper()
				ok, err := midOperation(t.Context(), env, rel, r)
				if err != nil {
					t.Fatalf("read the journal of %s after the kill: %v", rel, err)
				}
				return ok
			}
			// One trial per journal write, until a run is not killed: the write count is past the
			// end. That run tells how long the operation's journal lives before its last step.
			var writes, stepMid int
			var span time.Duration
			for n := 1; n <= 30; n++ {
				rel := fmt.Sprintf("%s-s%d", op.name, n)
				op.setup(t, env, chart, rel)
				ctx, cancel := context.WithCancel(t.Context())
				events := watchJournal(ctx, t, env, rel)
				r := berth(t, env, []string{fmt.Sprintf("BERTH_TEST_KILL_AFTER_STEP=%d", n)}, op.args(chart, rel)...)
				if !r.killed {
					if r.err != nil {
						t.Fatalf("%s without a kill: %v\n%s", op.name, r.err, r.out)
					}
					span = journalTimes(t, events)
					cancel()
					writes = n - 1
					break
				}
				cancel()
				m := mid(rel, r)
				if m {
					stepMid++
				}
				sum.add(m, followUp(t, env, op, chart, rel, followUps[trial%len(followUps)], true, fmt.Sprintf("killed after journal write %d", n)))
				trial++
			}
			if writes == 0 {
				t.Fatalf("%s was killed after each of 30 journal writes", op.name)
			}
			// Random moments within the operation: from the creation of its journal, less than
			// the time it took the run above to get to its last step.
			randomMid := 0
			for i := range random {
				rel := fmt.Sprintf("%s-r%d", op.name, i)
				op.setup(t, env, chart, rel)
				ctx, cancel := context.WithCancel(t.Context())
				events := watchJournal(ctx, t, env, rel)
				p := berthProcess(t, env, nil, op.args(chart, rel)...)
				when := killWithin(p, events, time.Duration(rnd.Int64N(int64(span)+1)))
				r := p.wait()
				cancel()
				if !r.killed && r.err != nil {
					t.Errorf("%s %s: failed without being killed: %v\n%s", op.name, when, r.err, r.out)
				}
				m := mid(rel, r)
				if m {
					randomMid++
				} else {
					t.Logf("%s %s: not mid-operation", op.name, when)
				}
				sum.add(m, followUp(t, env, op, chart, rel, followUps[trial%len(followUps)], m, when))
				trial++
			}
			t.Logf("%s: %d of %d trials killed mid-operation (%d of %d after a journal write, %d of %d at a random moment)",
				op.name, stepMid+randomMid, writes+random, stepMid, writes, randomMid, random)
			// The last journal write is its deletion, when the operation has ended.
			if stepMid != writes-1 {
				t.Errorf("%s: %d of %d kills after a journal write landed mid-operation, want %d: all but the one after the journal's deletion",
					op.name, stepMid, writes, writes-1)
			}
			if want := minRandomMid(random); randomMid < want {
				t.Errorf("%s: %d of %d kills at a random moment landed mid-operation, want at least %d", op.name, randomMid, random, want)
			}
		})
	}
}

// followUp runs one follow-up command after a kill and checks that release rel converged. With
// strict, the operation is known to have begun (its journal was written), so finishing it must
// reach what the operation intended.
func followUp(t *testing.T, env *testenv.Env, op operation, chart, rel, how string, strict bool, killed string) bool {
	t.Helper()
	var args []string
	switch how {
	case "recover":
		args = []string{"recover", rel}
	case "recover --rollback":
		args = []string{"recover", rel, "--rollback"}
	default:
		args = op.rerun(chart, rel)
	}
	r := berth(t, env, nil, args...)
	notFound := r.err != nil && strings.Contains(r.out, "not found")
	if r.err != nil && !(notFound && (op.name == "install" || op.name == "uninstall")) {
		t.Errorf("%s %s, then berth %s: %v\n%s", op.name, killed, strings.Join(args, " "), r.err, r.out)
		return false
	}
	got, problems := state(t.Context(), env, rel)
	want := []content{op.before, op.after}
	if strict && how != "recover --rollback" {
		want = []content{op.after}
	}
	if !contains(want, got) {
		problems = append(problems, fmt.Sprintf("chart version %q in the cluster, want one of %q", got, want))
	}
	if len(problems) > 0 {
		t.Errorf("%s %s, then berth %s: not converged:\n  %s\nfollow-up output:\n%s", op.name, killed, strings.Join(args, " "),
			strings.Join(problems, "\n  "), r.out)
		return false
	}
	return true
}

func contains(list []content, c content) bool {
	for _, x := range list {
		if x == c {
			return true
		}
	}
	return false
}

// TestTallyCountsConvergedMidOperationOnly: a trial whose kill came after its operation ended
// counts as a trial, and as a failure when its release did not converge, never as converged.
func TestTallyCountsConvergedMidOperationOnly(t *testing.T) {
	t.Parallel()
	var s tally
	s.add(true, true)
	s.add(true, false)
	s.add(false, true)
	s.add(false, false)
	if want := "crash suite: 4 trials, 2 killed mid-operation, 1 of those converged, 2 failures"; s.String() != want {
		t.Errorf("tally %q, want %q", s.String(), want)
	}
}
