package tenancy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func req(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

// TestNamespaceTurns: namespaces take turns, each in the order its Releases came.
func TestNamespaceTurns(t *testing.T) {
	q := newNamespaceTurns(4)
	for _, r := range []reconcile.Request{req("a", "1"), req("a", "2"), req("a", "3"), req("b", "1"), req("c", "1"), req("b", "2")} {
		q.Push(r)
	}
	var got []string
	for q.Len() > 0 {
		r := q.Pop()
		got = append(got, r.Namespace+"/"+r.Name)
	}
	if want := "[a/1 b/1 c/1 a/2 b/2 a/3]"; fmt.Sprint(got) != want {
		t.Errorf("order %v, want %s", got, want)
	}
	q.Push(req("d", "1"))
	if r := q.Pop(); r.Namespace != "d" || q.Len() != 0 {
		t.Errorf("after draining: %v, %d left", r, q.Len())
	}
}

// TestFairQueueServesALoneNamespace: behind 500 Releases of one namespace, another namespace's
// one Release is handed out at the latest second.
func TestFairQueueServesALoneNamespace(t *testing.T) {
	q := NewFairQueue(4)("", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	for i := range 500 {
		q.Add(req("crowded", fmt.Sprint(i)))
	}
	q.Add(req("alone", "web"))
	q.Add(req("crowded", "0")) // already waiting: keeps its place
	if q.Len() != 501 {
		t.Fatalf("Len %d, want 501", q.Len())
	}
	for i := range 2 {
		r, shutdown := q.Get()
		if shutdown {
			t.Fatal("queue shut down")
		}
		q.Done(r)
		if r.Namespace == "alone" {
			return
		}
		if i == 1 {
			t.Fatalf("the lone namespace's Release was not among the first two handed out (second: %v)", r)
		}
	}
}

// TestFairQueueDelays: what is added after a delay comes out through the namespace turns, in the
// order it becomes due and never before its delay: a Release added at once first, then one rate
// limited (its first backoff is milliseconds), then one added after a delay.
func TestFairQueueDelays(t *testing.T) {
	// The test's own bound: a queue that never hands a Release out fails it, not the suite.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	q := NewFairQueue(4)("", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown() // ends a Get still waiting when the test gives up
	const delay = 300 * time.Millisecond
	// Added in the order they become due, so that a test slowed down still sees that order.
	q.Add(req("c", "now"))
	q.AddRateLimited(req("b", "limited"))
	added := time.Now()
	q.AddAfter(req("a", "later"), delay)
	type handedOut struct {
		name  string
		after time.Duration
	}
	out := make(chan handedOut)
	go func() {
		for {
			r, shutdown := q.Get()
			if shutdown {
				return
			}
			q.Forget(r)
			q.Done(r)
			select {
			case out <- handedOut{r.Name, time.Since(added)}:
			case <-ctx.Done():
				return
			}
		}
	}()
	var got []string
	for range 3 {
		select {
		case h := <-out:
			got = append(got, h.name)
			if h.name == "later" && h.after < delay {
				t.Errorf("the Release added after %s was handed out after %s", delay, h.after)
			}
		case <-ctx.Done():
			t.Fatalf("handed out %v before the test's deadline, want all three", got)
		}
	}
	if want := "[now limited later]"; fmt.Sprint(got) != want {
		t.Errorf("handed out %v, want %s", got, want)
	}
}

// TestNamespaceTurnsShare: a namespace at its share is skipped, keeping its place, until one of
// its Releases is done; Len counts only what may be handed out.
func TestNamespaceTurnsShare(t *testing.T) {
	q := newNamespaceTurns(2)
	for _, r := range []reconcile.Request{req("a", "1"), req("a", "2"), req("a", "3"), req("a", "4"), req("b", "1"), req("b", "2")} {
		q.Push(r)
	}
	var got []string
	for q.Len() > 0 {
		r := q.Pop()
		got = append(got, r.Namespace+"/"+r.Name)
	}
	if want := "[a/1 b/1 a/2 b/2]"; fmt.Sprint(got) != want {
		t.Fatalf("order %v, want %s", got, want)
	}
	q.Push(req("c", "1"))
	if n := q.Len(); n != 1 {
		t.Fatalf("Len %d with a and b at their share, want 1 (c's)", n)
	}
	q.done("a")
	if n := q.Len(); n != 3 {
		t.Fatalf("Len %d once one of a's is done, want 3", n)
	}
	// a waited longest: its turn comes first.
	if r := q.Pop(); r != req("a", "3") {
		t.Fatalf("after a's done: %v, want a/3", r)
	}
	if r := q.Pop(); r != req("c", "1") {
		t.Fatalf("then %v, want c/1", r)
	}
	if n := q.Len(); n != 0 {
		t.Fatalf("Len %d, want 0: a at its share again", n)
	}
}

// TestNamespaceShare: of four workers, one namespace has three; one worker is always left.
func TestNamespaceShare(t *testing.T) {
	for workers, want := range map[int]int{1: 1, 2: 1, 4: 3, 10: 9} {
		if got := NamespaceShare(workers); got != want {
			t.Errorf("share of %d workers: %d, want %d", workers, got, want)
		}
	}
}

// TestFairQueueKeepsAWorker: with four workers, a namespace whose Releases are all held has
// three of them; another namespace's Release, added later, is handed out to the fourth, and the
// first namespace gets a worker again once one of its Releases is done.
func TestFairQueueKeepsAWorker(t *testing.T) {
	q := NewFairQueue(4)("", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	for i := range 12 {
		q.Add(req("hostile", fmt.Sprint(i)))
	}
	var held []reconcile.Request
	for range 3 {
		r, shutdown := q.Get()
		if shutdown || r.Namespace != "hostile" {
			t.Fatalf("Get: %v, %t", r, shutdown)
		}
		held = append(held, r)
	}
	// The fourth worker waits: what it gets is what is added next, not a fourth of hostile's.
	got := make(chan reconcile.Request)
	go func() {
		r, _ := q.Get()
		got <- r
	}()
	q.Add(req("other", "web"))
	if r := <-got; r != req("other", "web") {
		t.Fatalf("fourth worker got %v, want other/web", r)
	}
	// Another Get waits until a hostile Release is done, then takes the next hostile one.
	go func() {
		r, _ := q.Get()
		got <- r
	}()
	q.Done(held[0])
	if r := <-got; r != req("hostile", "3") {
		t.Fatalf("after a hostile Release was done: %v, want hostile/3", r)
	}
	// A Release added again while it runs comes back once done, within the share.
	q.Add(held[1])
	q.Done(held[1])
	if r, _ := q.Get(); r != req("hostile", "4") {
		t.Fatalf("next: %v, want hostile/4 (hostile/1 waits behind it)", r)
	}
}

// TestFairQueueShutDown: a Get waiting for a namespace under its share ends when the queue shuts
// down.
func TestFairQueueShutDown(t *testing.T) {
	q := NewFairQueue(2)("", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	q.Add(req("a", "1"))
	q.Add(req("a", "2"))
	if r, _ := q.Get(); r != req("a", "1") {
		t.Fatalf("Get: %v", r)
	}
	done := make(chan bool)
	go func() {
		_, shutdown := q.Get()
		done <- shutdown
	}()
	q.ShutDown()
	if !<-done {
		t.Fatal("Get after ShutDown: not shut down")
	}
}
