// Package tenancy shares the controller's workers between tenants: a work queue that gives
// namespaces turns and keeps one namespace from holding every worker. It needs nothing of the
// controller's.
package tenancy

import (
	"sync"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// NamespaceShare is how many of workers Releases one namespace may have reconciled at once: all
// but one, so that whatever one namespace's Releases wait for, a worker is always free for the
// other namespaces'. With one worker there is nothing to keep.
func NamespaceShare(workers int) int {
	return max(workers-1, 1)
}

// NewFairQueue returns the controller's work queue for workers workers: client-go's
// rate-limited, delaying queue (with its metrics under name), whose items are handed out by
// namespaceTurns, so that the workers are shared fairly between namespaces and no namespace holds
// more than NamespaceShare of them.
func NewFairQueue(workers int) func(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		turns := newNamespaceTurns(NamespaceShare(workers))
		q := &sharedQueue{TypedInterface: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[reconcile.Request]{Name: name, Queue: turns}), turns: turns}
		delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[reconcile.Request]{Name: name, Queue: q})
		return workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{
			Name: name, DelayingQueue: delaying,
		})
	}
}

// namespaceTurns holds the Releases waiting for a worker, first in first out within a namespace,
// and gives the namespaces turns: each Pop takes the next namespace's oldest Release. A namespace
// with 500 Releases waiting delays another namespace's one Release by at most one Pop of each
// other namespace with work, not by its 500. A namespace that has share Releases being reconciled
// is skipped, keeping its place, until one of them is done (sharedQueue tells it). The work
// queue calls Touch, Push, Len and Pop under its own lock; mu guards what done and
// waitHandOut read from outside it.
type namespaceTurns struct {
	mu sync.Mutex
	// handOut is signalled when a Release may be handed out, or the queue closes.
	handOut *sync.Cond
	waiting map[string][]reconcile.Request
	// turns are the namespaces with Releases waiting, in the order of their next turn.
	turns []string
	// running counts, by namespace, the Releases handed out and not yet done.
	running map[string]int
	// share is the most Releases of one namespace handed out and not yet done.
	share  int
	closed bool
}

var _ workqueue.Queue[reconcile.Request] = (*namespaceTurns)(nil)

func newNamespaceTurns(share int) *namespaceTurns {
	q := &namespaceTurns{waiting: map[string][]reconcile.Request{}, running: map[string]int{}, share: share}
	q.handOut = sync.NewCond(&q.mu)
	return q
}

// Touch does nothing: a Release added again while it waits keeps its place.
func (q *namespaceTurns) Touch(reconcile.Request) {}

func (q *namespaceTurns) Push(r reconcile.Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	ns := r.Namespace
	if len(q.waiting[ns]) == 0 {
		q.turns = append(q.turns, ns)
	}
	q.waiting[ns] = append(q.waiting[ns], r)
	if q.running[ns] < q.share {
		q.handOut.Signal()
	}
}

// Len is how many Releases may be handed out now: those waiting in namespaces under their share.
func (q *namespaceTurns) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ready()
}

func (q *namespaceTurns) ready() int {
	n := 0
	for ns, list := range q.waiting {
		if q.running[ns] < q.share {
			n += len(list)
		}
	}
	return n
}

// Pop takes the oldest Release of the first namespace in turn that is under its share; that
// namespace, if it has more, waits for its next turn behind the others. Namespaces at their share
// keep their places. The work queue calls it only when Len is not 0.
func (q *namespaceTurns) Pop() reconcile.Request {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := 0
	for i < len(q.turns) && q.running[q.turns[i]] >= q.share {
		i++
	}
	if i == len(q.turns) {
		return reconcile.Request{} // not called so: Len is 0
	}
	ns := q.turns[i]
	q.turns = append(q.turns[:i], q.turns[i+1:]...)
	list := q.waiting[ns]
	r := list[0]
	list[0] = reconcile.Request{}
	if list = list[1:]; len(list) > 0 {
		q.waiting[ns] = list
		q.turns = append(q.turns, ns)
	} else {
		delete(q.waiting, ns)
	}
	q.running[ns]++
	return r
}

// done says a Release of namespace ns handed out is done: the namespace may have another.
func (q *namespaceTurns) done(ns string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.running[ns]--; q.running[ns] <= 0 {
		delete(q.running, ns)
	}
	if len(q.waiting[ns]) > 0 {
		q.handOut.Signal()
	}
}

// waitHandOut returns once a Release may be handed out, or the queue is closed.
func (q *namespaceTurns) waitHandOut() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.ready() == 0 && !q.closed {
		q.handOut.Wait()
	}
}

// close ends every wait for a Release.
func (q *namespaceTurns) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.handOut.Broadcast()
}

// sharedQueue is client-go's work queue over namespaceTurns, which tells namespaceTurns when a
// Release is done (the inner queue sees only Push and Pop) and waits for a Release that may be
// handed out itself: client-go's queue wakes a waiting Get when a Release is added, not when one
// that was held back by its namespace's share may go. One Get at a time waits, so that what it
// saw it may take is still there when it takes it.
type sharedQueue struct {
	workqueue.TypedInterface[reconcile.Request]
	turns *namespaceTurns
	get   sync.Mutex
}

func (q *sharedQueue) Get() (reconcile.Request, bool) {
	q.get.Lock()
	defer q.get.Unlock()
	q.turns.waitHandOut()
	return q.TypedInterface.Get()
}

func (q *sharedQueue) Done(r reconcile.Request) {
	q.turns.done(r.Namespace)
	q.TypedInterface.Done(r)
}

func (q *sharedQueue) ShutDown() {
	q.turns.close()
	q.TypedInterface.ShutDown()
}

func (q *sharedQueue) ShutDownWithDrain() {
	q.turns.close()
	q.TypedInterface.ShutDownWithDrain()
}
