package release

import (
	"testing"
	"time"
)

// A Lease anyone may write claims a year: it is taken to expire after MaxLeaseDuration
// unchanged. berth's own duration is under the cap, so a live berth holder is never taken over.
func TestLeaseDurationCapped(t *testing.T) {
	s := &Leases{}
	for _, tc := range []struct{ claims, want time.Duration }{
		{0, DefaultLeaseDuration},
		{DefaultLeaseDuration, DefaultLeaseDuration},
		{365 * 24 * time.Hour, MaxLeaseDuration},
	} {
		if got := s.durationOf(Holder{Duration: tc.claims}); got != tc.want {
			t.Errorf("a lease of %s: taken to last %s, want %s", tc.claims, got, tc.want)
		}
	}
	if MaxLeaseDuration < 2*DefaultLeaseDuration {
		t.Errorf("the cap %s is below what a holder renewing every third of %s needs", MaxLeaseDuration, DefaultLeaseDuration)
	}
}
