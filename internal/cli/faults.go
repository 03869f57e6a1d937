package cli

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// Fault injection, for crash tests only; never set these variables in normal use. Unset, they do
// nothing.
const (
	// killAfterStepEnv=N makes berth kill itself (SIGKILL) right after its Nth journal write.
	killAfterStepEnv = "BERTH_TEST_KILL_AFTER_STEP"
	// killAfterEnv=DURATION makes berth kill itself (SIGKILL) DURATION after it connected to the
	// cluster for an operation.
	killAfterEnv = "BERTH_TEST_KILL_AFTER"
)

// faultInjection reads the fault injection variables through getenv. It returns the function to
// tell of journal writes (nil when none is asked for) and starts the timer of killAfterEnv.
func faultInjection(getenv func(string) string) (func(n int), error) {
	var written func(int)
	if s := getenv(killAfterStepEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s=%q: want a positive number", killAfterStepEnv, s)
		}
		written = func(count int) {
			if count == n {
				killSelf()
			}
		}
	}
	if s := getenv(killAfterEnv); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %w", killAfterEnv, s, err)
		}
		time.AfterFunc(d, killSelf)
	}
	return written, nil
}

// killSelf ends the process at once, as a crash would: no deferred call runs, nothing is cleaned
// up. The caller never goes on.
func killSelf() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Kill()
	}
	select {}
}
