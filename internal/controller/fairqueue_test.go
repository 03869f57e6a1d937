package controller

import (
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
	var q namespaceTurns
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
	q := newFairQueue("", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
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

// TestFairQueueDelays: what is added after a delay still comes out, through the namespace turns.
func TestFairQueueDelays(t *testing.T) {
	q := newFairQueue("", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	q.AddAfter(req("a", "later"), time.Millisecond)
	q.AddRateLimited(req("b", "limited"))
	seen := map[string]bool{}
	for len(seen) < 2 {
		r, shutdown := q.Get()
		if shutdown {
			t.Fatal("queue shut down")
		}
		seen[r.Name] = true
		q.Forget(r)
		q.Done(r)
	}
}
