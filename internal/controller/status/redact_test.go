package status

import "testing"

func TestWithoutMessage(t *testing.T) {
	for in, want := range map[string]string{
		"c: terminated, exit code 1 (Error): out":  "c: terminated, exit code 1 (Error)",
		"c: terminated, exit code 137 (OOMKilled)": "c: terminated, exit code 137 (OOMKilled)",
		"c: terminated, exit code 2: out (x): y":   "c: terminated, exit code 2",
		"c: waiting: CrashLoopBackOff: back-off":   "c: waiting: CrashLoopBackOff",
		"c: waiting":                               "c: waiting",
		"c: running":                               "c: running",
		"c: something else: out":                   "c",
	} {
		if got := WithoutMessage(in); got != want {
			t.Errorf("WithoutMessage(%q) = %q, want %q", in, got, want)
		}
	}
}
