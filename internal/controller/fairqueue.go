package controller

import (
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// newFairQueue is the controller's work queue: client-go's rate-limited, delaying queue (with its
// metrics under name), whose items are handed out by namespaceTurns, so that the workers are
// shared fairly between namespaces.
func newFairQueue(name string, limiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[reconcile.Request]{Name: name, Queue: &namespaceTurns{}})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[reconcile.Request]{Name: name, Queue: q})
	return workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{
		Name: name, DelayingQueue: delaying,
	})
}

// namespaceTurns holds the Releases waiting for a worker, first in first out within a namespace,
// and gives the namespaces turns: each Pop takes the next namespace's oldest Release. A namespace
// with 500 Releases waiting delays another namespace's one Release by at most one Pop of each
// other namespace with work, not by its 500. The work queue calls it under its own lock.
type namespaceTurns struct {
	waiting map[string][]reconcile.Request
	// turns are the namespaces with Releases waiting, in the order of their next turn.
	turns []string
	n     int
}

var _ workqueue.Queue[reconcile.Request] = (*namespaceTurns)(nil)

// Touch does nothing: a Release added again while it waits keeps its place.
func (q *namespaceTurns) Touch(reconcile.Request) {}

func (q *namespaceTurns) Push(r reconcile.Request) {
	if q.waiting == nil {
		q.waiting = map[string][]reconcile.Request{}
	}
	ns := r.Namespace
	if len(q.waiting[ns]) == 0 {
		q.turns = append(q.turns, ns)
	}
	q.waiting[ns] = append(q.waiting[ns], r)
	q.n++
}

func (q *namespaceTurns) Len() int { return q.n }

// Pop takes the oldest Release of the namespace whose turn it is; that namespace, if it has more,
// waits for its next turn behind the others.
func (q *namespaceTurns) Pop() reconcile.Request {
	ns := q.turns[0]
	q.turns[0] = ""
	q.turns = q.turns[1:]
	list := q.waiting[ns]
	r := list[0]
	list[0] = reconcile.Request{}
	if list = list[1:]; len(list) > 0 {
		q.waiting[ns] = list
		q.turns = append(q.turns, ns)
	} else {
		delete(q.waiting, ns)
	}
	q.n--
	return r
}
