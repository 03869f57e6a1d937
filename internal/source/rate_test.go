package source_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/source"
)

// TestSlowTransferIsEnded: a repository that answers at once and then sends a byte a second is
// ended at the first window below the minimum rate, long before any timeout, with an error that
// names its host, what it sent and the minimum; a repository that answers at speed is fetched
// from under the same minimum.
func TestSlowTransferIsEnded(t *testing.T) {
	slow := func() source.FetchOptions {
		o := patient()
		o.MinRate, o.RateWindow = 100, 300*time.Millisecond
		return o
	}
	trickling := tricklingServer(t)
	_, err := fetchFrom(t.Context(), settingsIn(t), source.NewFetcher(slow()), trickling.URL, "0.1.0")
	var se *source.SlowTransferError
	if !errors.As(err, &se) {
		t.Fatalf("fetch from a trickling repository: %v, want a SlowTransferError", err)
	}
	host := hostOf(trickling.URL)
	if se.Host != host || se.MinRate != 100 || se.Got >= 30 {
		t.Errorf("SlowTransferError %+v, want host %s, minimum 100 and fewer than 30 bytes", se, host)
	}
	for _, want := range []string{host, "below the minimum of 100 bytes/s", "--min-fetch-rate"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	healthy := newCountingRepo(t, "etag", nil)
	if _, err := fetchFrom(t.Context(), settingsIn(t), source.NewFetcher(slow()), healthy.URL, "0.1.0"); err != nil {
		t.Errorf("fetch from a repository that answers at speed, under a minimum rate: %v", err)
	}
}
