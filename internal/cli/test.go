package cli

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthdev/berth/internal/lifecycle"
)

type testFlags struct {
	timeout     time.Duration
	waitForLock bool
	logs        bool
	filter      []string
}

func newTestCommand(streams Streams) *cobra.Command {
	var flags testFlags
	cmd := &cobra.Command{
		Use:   "test RELEASE",
		Short: "run the tests of a release",
		Long: `Run the tests of a release: its hooks annotated helm.sh/hook: test, in Helm's
order (by weight, then name) and with their delete policies, each to an observed
outcome. The last run of each test is recorded in the release, where helm status
and berth status show it. A failed test is named with its Pods' last state,
events and logs.

A test run is an operation: it holds the release's lease, so it refuses to run
while another berth operation changes the release (or waits for it with
--wait-for-lock), finishes an operation left interrupted first, and journals its
plan (the tests, then their record) until it ends.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeReleaseName,
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := flags.options(args[0])
			if err != nil {
				return err
			}
			s, err := newSession(cmd.Context(), cmd, streams.ErrOut)
			if err != nil {
				return err
			}
			res, runErr := lifecycle.Test(cmd.Context(), s.deps, o)
			if res == nil {
				return runErr
			}
			// As helm test: the status without the notes, then the logs.
			rel := *res.Release
			info := *rel.Info
			info.Notes = ""
			rel.Info = &info
			if err := (statusWriter{rel: &rel}).WriteTable(streams.Out); err != nil {
				return errors.Join(runErr, err)
			}
			if flags.logs {
				fmt.Fprintln(streams.Out)
				writeTestLogs(streams.Out, res.Logs)
			}
			return runErr
		},
	}
	f := cmd.Flags()
	f.DurationVar(&flags.timeout, "timeout", 5*time.Minute, "deadline for the whole test run")
	f.BoolVar(&flags.waitForLock, "wait-for-lock", false, "when another berth operation holds the release, wait for it (within --timeout) instead of failing")
	f.BoolVar(&flags.logs, "logs", false, "print the logs of the test Pods (read after the tests ran, before any is deleted)")
	f.StringSliceVar(&flags.filter, "filter", nil, `select tests by name: name=test1 runs only test1, '!name=test2' runs all but test2 (repeat or separate with commas)`)
	return cmd
}

func (f testFlags) options(name string) (lifecycle.TestOptions, error) {
	o := lifecycle.TestOptions{Name: name, Timeout: f.timeout, WaitForLock: f.waitForLock, Logs: f.logs}
	for _, v := range f.filter {
		if !o.AddFilter(v) {
			return o, fmt.Errorf("invalid --filter %q: want name=NAME or !name=NAME", v)
		}
	}
	return o, nil
}

// writeTestLogs prints each test Pod's logs as helm test --logs does, or why there are none.
func writeTestLogs(w io.Writer, logs []lifecycle.HookLogs) {
	if len(logs) == 0 {
		fmt.Fprintln(w, "POD LOGS: none (no test ran)")
	}
	for _, h := range logs {
		if len(h.Logs) == 0 {
			fmt.Fprintf(w, "POD LOGS: none for %s (it has no Pods)\n", h.Hook)
		}
		for _, key := range slices.Sorted(maps.Keys(h.Logs)) {
			pod, container, _ := strings.Cut(key, "/")
			text := h.Logs[key]
			if strings.HasPrefix(text, "not available") {
				fmt.Fprintf(w, "POD LOGS: %s (%s): %s\n", pod, container, text)
				continue
			}
			fmt.Fprintf(w, "POD LOGS: %s (%s)\n%s\n", pod, container, strings.TrimRight(text, "\n"))
		}
	}
}
