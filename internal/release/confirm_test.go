package release

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berthdev/berth/internal/testenv"
)

// TestLeaseConfirm: a lease acquired or renewed less than a sixth of its duration ago is
// confirmed without a request; later, Confirm renews it, and finds it lost when another holds it.
func TestLeaseConfirm(t *testing.T) {
	env := testenv.New(t)
	fc := testingclock.NewFakeClock(time.Now())
	s := shortLeases(env, 30*time.Second, 50*time.Millisecond)
	s.Clock = fc
	l, err := s.Acquire(t.Context(), "web", Self("berth install web"))
	if err != nil {
		t.Fatal(err)
	}
	version := func() string {
		t.Helper()
		got, err := env.Client.CoordinationV1().Leases(env.Namespace).Get(t.Context(), LeaseKey("web"), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.ResourceVersion
	}
	acquired := version()
	fc.Step(4 * time.Second)
	if err := l.Confirm(t.Context()); err != nil {
		t.Fatalf("confirm just after acquiring: %v", err)
	}
	if v := version(); v != acquired {
		t.Errorf("confirm just after acquiring wrote the lease (version %s, then %s)", acquired, v)
	}
	fc.Step(2 * time.Second)
	if err := l.Confirm(t.Context()); err != nil {
		t.Fatalf("confirm a sixth of the duration after acquiring: %v", err)
	}
	renewed := version()
	if renewed == acquired {
		t.Error("confirm a sixth of the duration after acquiring did not renew the lease")
	}

	// Another takes the lease over (as if it had seen it expire): Confirm, once due, says so.
	leases := env.Client.CoordinationV1().Leases(env.Namespace)
	cur, err := leases.Get(t.Context(), LeaseKey("web"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := "elsewhere/1/new"
	cur.Spec.HolderIdentity = &other
	if _, err := leases.Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fc.Step(5 * time.Second)
	if err := l.Confirm(t.Context()); !errors.Is(err, ErrLost) {
		t.Fatalf("confirm a lease taken over: %v, want ErrLost", err)
	}
	if err := l.Confirm(t.Context()); !errors.Is(err, ErrLost) {
		t.Fatalf("confirm a lease known lost: %v, want ErrLost", err)
	}
}
