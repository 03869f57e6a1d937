package cli

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/resource"
)

// TestWatchFlagsHelp: install, upgrade and rollback take the watch window's flags, with their
// defaults: no window, a tolerance of 30s, no restart allowed.
func TestWatchFlagsHelp(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"install", "upgrade", "rollback"} {
		stdout, _, err := run(t, cmd, "--help")
		if err != nil {
			t.Fatalf("berth %s --help: %v", cmd, err)
		}
		for _, want := range []string{"--watch-for duration", "--watch-tolerance duration", "(default 30s)", "--watch-restarts int",
			"counts in --timeout", "implies --wait"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("berth %s --help does not show %q", cmd, want)
			}
		}
	}
}

// TestWatchFlagsBadInput: a negative window, tolerance or restart count is refused, naming its
// flag, before a chart is read or a cluster contacted.
func TestWatchFlagsBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"install", "web", "./no-such-chart", "--watch-for=-1s"}, "invalid --watch-for -1s"},
		{[]string{"upgrade", "web", "./no-such-chart", "--watch-for", "1m", "--watch-tolerance=-5s"}, "invalid --watch-tolerance -5s"},
		{[]string{"upgrade", "web", "./no-such-chart", "--install", "--watch-for", "1m", "--watch-restarts=-1"}, "invalid --watch-restarts -1"},
		{[]string{"rollback", "web", "1", "--watch-for=-1m"}, "invalid --watch-for -1m0s"},
	}
	for _, tt := range tests {
		_, _, err := run(t, append(tt.args, "--kubeconfig", "/nonexistent")...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("berth %s: %v, want %q", strings.Join(tt.args, " "), err, tt.want)
		}
	}
}

// TestWindowFlagError: the lifecycle's refusal of a window that does not fit is worded in the
// flags that set it.
func TestWindowFlagError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want string
	}{
		{&lifecycle.WindowTooLongError{For: time.Minute, Timeout: time.Minute, Own: time.Minute},
			"--watch-for 1m0s does not fit in --timeout 1m0s: the window counts in it and must be shorter; nothing was changed"},
		{&lifecycle.WindowTooLongError{For: 3 * time.Minute, Timeout: 4 * time.Minute, Own: 160 * time.Second, Undo: true},
			"the last third of it is kept for undoing a failure (--rollback-on-failure, --cleanup-on-fail): the window must be shorter than 2m40s"},
		{&lifecycle.WindowOptionError{Option: "tolerance", Value: "-1s"}, "invalid --watch-tolerance -1s"},
	}
	for _, tt := range tests {
		got := explainOperationError(tt.err)
		if !strings.Contains(got.Error(), tt.want) {
			t.Errorf("%v: %q, want it to say %q", tt.err, got, tt.want)
		}
	}
	if err := errors.New("other"); explainOperationError(err) != err {
		t.Error("an error that is no window's is changed")
	}
}

// TestWindowLine: berth status says what a watch window watches and what is left of it, for an
// operation under way and for one a resumption finishes; nothing once the window passed.
func TestWindowLine(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	w := func(started time.Time, done bool) *lifecycle.Window {
		lw := &lifecycle.Window{Step: "watch/2", Revision: 2, Started: started, Done: done}
		lw.For, lw.Tolerance, lw.Objects = time.Minute, 30*time.Second, make([]resource.Identity, 3)
		return lw
	}
	tests := []struct {
		name        string
		w           *lifecycle.Window
		interrupted bool
		want        string
	}{
		{"none", nil, false, ""},
		{"passed", w(start, true), false, ""},
		{"not started", w(time.Time{}, false), false, "3 object(s) watched for regressions for 1m0s (not ready for 30s at most, 0 restart(s) of a container); it starts once they are ready"},
		{"running", w(start, false), false, "started Fri Nov 27 10:00:00 2026, 40s left"},
		{"interrupted", w(start, false), true, "resuming watches for the 40s left"},
		{"interrupted, over", w(start.Add(-time.Hour), false), true, "its time is over: resuming judges the revision once"},
	}
	for _, tt := range tests {
		got := windowLine(tt.w, start.Add(20*time.Second), tt.interrupted)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("%s: windowLine = %q, want it to say %q", tt.name, got, tt.want)
		}
		if tt.want != "" && !strings.HasPrefix(got, "WATCH WINDOW: revision 2: ") {
			t.Errorf("%s: windowLine = %q, want it to start with the revision", tt.name, got)
		}
	}
}
