package testenv

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// ReadPID waits until a process the test started writes its id, one line, into path, and returns
// it.
func ReadPID(t testing.TB, path string) string {
	t.Helper()
	var pid string
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false, nil
		}
		pid = strings.TrimSpace(string(b))
		return true, nil
	})
	if err != nil {
		t.Fatalf("no process id was written to %s: %v", path, err)
	}
	return pid
}

// WaitProcessGone waits until process pid has ended: gone, or a zombie left for its parent or
// init to reap.
func WaitProcessGone(t testing.TB, pid string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		return err != nil || strings.Contains(string(stat), ") Z "), nil
	})
	if err != nil {
		t.Fatalf("process %s still runs: %v", pid, err)
	}
}
