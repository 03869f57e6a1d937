package controller

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/berthdev/berth/internal/source"
)

// queueOf starts f's source with a queue of its own, and returns the queue.
func queueOf(t *testing.T, f *fetches) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	t.Helper()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	if err := f.source().Start(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	return q
}

// TestFetchesShareOneFetchOffTheWorkers: two Releases asking for one chart with the same access
// share one fetch; while it is under way each gets a FetchPendingError, both are queued when it
// ends, and then each gets its path.
func TestFetchesShareOneFetchOffTheWorkers(t *testing.T) {
	f := newFetches(0)
	f.hold = time.Millisecond
	q := queueOf(t, f)
	release := make(chan struct{})
	var calls atomic.Int32
	fetch := func(ctx context.Context) (located, error) {
		calls.Add(1)
		select {
		case <-release:
			return located{path: "/cache/web-0.3.0.tgz"}, nil
		case <-ctx.Done():
			return located{}, ctx.Err()
		}
	}
	a, b := types.NamespacedName{Namespace: "team-a", Name: "web"}, types.NamespacedName{Namespace: "team-b", Name: "web"}
	for _, rel := range []types.NamespacedName{a, b} {
		_, _, err := f.get(t.Context(), rel, "key", "https://charts.example/", time.Hour, fetch)
		if pending := new(FetchPendingError); !errors.As(err, &pending) {
			t.Fatalf("%s: got %v, want a FetchPendingError while the fetch is under way", rel, err)
		}
	}
	close(release)
	got := map[types.NamespacedName]bool{}
	for range 2 {
		req, shutdown := q.Get()
		if shutdown {
			t.Fatal("queue shut down")
		}
		got[req.NamespacedName] = true
		q.Done(req)
	}
	if !got[a] || !got[b] {
		t.Fatalf("queued %v once the fetch ended, want %s and %s", got, a, b)
	}
	for _, rel := range []types.NamespacedName{a, b} {
		path, _, err := f.get(t.Context(), rel, "key", "https://charts.example/", time.Hour, fetch)
		if err != nil || path.path != "/cache/web-0.3.0.tgz" {
			t.Fatalf("%s: got %q, %v, want the fetched path", rel, path.path, err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("fetched %d times, want once", n)
	}
}

// TestFetchesDeadlineNamesTheHostAndCancels: a fetch that never ends fails a Release at its
// deadline with a TimeoutError naming the repository's host, and is canceled when nobody waits
// for it anymore.
func TestFetchesDeadlineNamesTheHostAndCancels(t *testing.T) {
	f := newFetches(0)
	f.hold = time.Millisecond
	canceled := make(chan struct{})
	fetch := func(ctx context.Context) (located, error) {
		<-ctx.Done()
		close(canceled)
		return located{}, ctx.Err()
	}
	rel := types.NamespacedName{Namespace: "team-a", Name: "web"}
	var err error
	for {
		_, _, err = f.get(t.Context(), rel, "key", "https://charts.example:8443/stable", 50*time.Millisecond, fetch)
		if pending := new(FetchPendingError); !errors.As(err, &pending) {
			break
		}
	}
	var te *source.TimeoutError
	if !errors.As(err, &te) || te.Host != "charts.example:8443" || te.After != 50*time.Millisecond {
		t.Fatalf("got %v, want a TimeoutError of host charts.example:8443 after 50ms", err)
	}
	<-canceled
}

// TestFetchesNewAskAfterSpecChange: a Release whose spec changes while its fetch is under way
// waits for the new one, and the old one, which nobody waits for anymore, is canceled.
func TestFetchesNewAskAfterSpecChange(t *testing.T) {
	f := newFetches(0)
	f.hold = time.Millisecond
	canceled := make(chan struct{})
	hung := func(ctx context.Context) (located, error) {
		<-ctx.Done()
		close(canceled)
		return located{}, ctx.Err()
	}
	rel := types.NamespacedName{Namespace: "team-a", Name: "web"}
	if _, _, err := f.get(t.Context(), rel, "old", "https://old.example/", time.Hour, hung); err == nil {
		t.Fatal("the hung fetch returned")
	}
	path, _, err := f.get(t.Context(), rel, "new", "https://new.example/", time.Hour, func(context.Context) (located, error) {
		return located{path: "/cache/new.tgz"}, nil
	})
	for pending := new(FetchPendingError); errors.As(err, &pending); {
		path, _, err = f.get(t.Context(), rel, "new", "https://new.example/", time.Hour, nil)
	}
	if err != nil || path.path != "/cache/new.tgz" {
		t.Fatalf("got %q, %v, want the new fetch's path", path.path, err)
	}
	<-canceled
}
