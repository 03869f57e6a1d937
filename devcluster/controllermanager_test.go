package main

import (
	"slices"
	"testing"
	"time"
)

func TestSplitJobBatchPeriod(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		want     time.Duration
		wantRest []string
		wantErr  bool
	}{
		{"leading", []string{"--devcluster-job-batch-period=50ms", "--v=1"}, 50 * time.Millisecond, []string{"--v=1"}, false},
		{"only", []string{"--devcluster-job-batch-period=1s"}, time.Second, []string{}, false},
		{"absent", []string{"--v=1"}, 0, []string{"--v=1"}, false},
		{"none", nil, 0, nil, false},
		{"not leading", []string{"--v=1", "--devcluster-job-batch-period=1s"}, 0, []string{"--v=1", "--devcluster-job-batch-period=1s"}, false},
		{"zero", []string{"--devcluster-job-batch-period=0s"}, 0, nil, true},
		{"negative", []string{"--devcluster-job-batch-period=-1s"}, 0, nil, true},
		{"bad", []string{"--devcluster-job-batch-period=soon"}, 0, nil, true},
		{"empty", []string{"--devcluster-job-batch-period="}, 0, nil, true},
	}
	for _, tt := range tests {
		got, rest, err := splitJobBatchPeriod(tt.args)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: error %v, want error %t", tt.name, err, tt.wantErr)
			continue
		}
		if got != tt.want || !slices.Equal(rest, tt.wantRest) {
			t.Errorf("%s: got %s %q, want %s %q", tt.name, got, rest, tt.want, tt.wantRest)
		}
	}
}

func TestControllerManagerArgsRoundTrip(t *testing.T) {
	args := controllerManagerArgs("/k", &pki{}, 50*time.Millisecond, defaultControllerQPS)
	got, rest, err := splitJobBatchPeriod(args)
	if err != nil {
		t.Fatal(err)
	}
	if got != 50*time.Millisecond || len(rest) != len(args)-1 {
		t.Errorf("split %q = %s and %d arguments, want 50ms and %d", args, got, len(rest), len(args)-1)
	}
}
