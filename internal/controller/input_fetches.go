package controller

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/berthdev/berth/internal/par"
	"github.com/berthdev/berth/internal/provenance"
	"github.com/berthdev/berth/internal/source"
)

// fetchHold is how long a reconcile waits for a fetch it starts (or one started less than
// fetchHold ago) before it gives its worker back. A chart of a repository that answers is
// had within it; one that does not answer is waited for off the workers.
const fetchHold = 2 * time.Second

// maxFetch bounds a fetch that Releases keep asking for, whatever their timeouts.
const maxFetch = 10 * time.Minute

// maxFetchesAtOnce bounds the fetches under way at once: each holds up to a chart's or an
// index's size limit in memory, and an index's parse many times that. A fetch waits for its turn
// within its own bounds (the deadlines of the Releases that asked for it).
const maxFetchesAtOnce = 4

// DefaultFetchesPerNamespace is how many of the maxFetchesAtOnce fetches one namespace's
// Releases may have under way at once unless told otherwise: half, so that a namespace whose
// repositories answer slowly leaves the others slots.
const DefaultFetchesPerNamespace = maxFetchesAtOnce / 2

// freshFor is how long a chart fetched for a key is taken again, without a fetch (nor its slot
// nor a request), by the Releases that ask for the same key: as long as the fetcher keeps a
// repository index without validators.
const freshFor = time.Minute

// fetches runs chart fetches apart from the controller's workers, so that a repository that
// takes connections and never answers holds no worker for a Release's whole timeout. Releases
// that ask for one chart with the same credentials share one fetch. A reconcile waits at most
// fetchHold; when the fetch is still under way, it returns a FetchPendingError and the Release
// is reconciled again as soon as the fetch ends, or when its own deadline (the spec.timeout
// from its first ask) comes. A fetch goes on while a Release waits for it: it is canceled once
// the deadlines of all that asked for it have passed.
type fetches struct {
	mu      sync.Mutex
	flights map[string]*chartFlight
	waits   map[types.NamespacedName]*fetchWait
	// queue is the controller's work queue, to reconcile the Releases a fetch ends for; nil
	// until the controller starts (its Releases are then reconciled at their deadlines).
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
	hold  time.Duration
	// slots are the fetches under way: maxFetchesAtOnce at most, at most a share of them for
	// one namespace, the namespaces waiting taking turns.
	slots *par.Shares
	// fresh are the charts fetched in the last freshFor, by key.
	fresh map[string]freshChart
}

// freshChart is a chart fetched at a time.
type freshChart struct {
	chart located
	at    time.Time
}

// newFetches returns fetches of which one namespace's Releases have at most perNamespace
// under way at once (DefaultFetchesPerNamespace when 0 or less).
func newFetches(perNamespace int) *fetches {
	if perNamespace <= 0 {
		perNamespace = DefaultFetchesPerNamespace
	}
	return &fetches{flights: map[string]*chartFlight{}, waits: map[types.NamespacedName]*fetchWait{}, hold: fetchHold,
		slots: par.NewShares(maxFetchesAtOnce, perNamespace), fresh: map[string]freshChart{}}
}

// chartFlight is one fetch under way.
type chartFlight struct {
	done    chan struct{}
	started time.Time
	chart   located
	err     error
	// until is the latest deadline of the Releases that asked for it; timer cancels the fetch
	// then.
	until  time.Time
	timer  *time.Timer
	cancel context.CancelFunc
	// waiters are the Releases waiting for it, reconciled when it ends.
	waiters map[types.NamespacedName]struct{}
}

// fetchWait is a Release waiting for a fetch: since its first ask, until its deadline.
type fetchWait struct {
	key      string
	flight   *chartFlight
	since    time.Time
	deadline time.Time
	timeout  time.Duration
	// holding says a reconcile is waiting for the fetch now, and takes its result itself.
	holding bool
}

// FetchPendingError says that a Release's chart is still being fetched: the Release is
// reconciled again when the fetch ends, or at Deadline at the latest.
type FetchPendingError struct {
	Deadline time.Time
}

func (e *FetchPendingError) Error() string {
	return fmt.Sprintf("the chart is still being fetched (until %s at the latest)", e.Deadline.Format(time.RFC3339))
}

// source is the controller's source of the reconciles that fetches ask for: it hands f the
// controller's queue.
func (f *fetches) source() crsource.Source {
	return crsource.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.queue = q
		return nil
	})
}

// get returns the packaged chart fetch gets (and the proof of its verification), for Release rel asking with key (what it fetches, with which
// credentials) within timeout of its first ask, and how long rel has waited for it since. When
// the fetch is still under way after the hold, it returns a FetchPendingError; once rel's
// deadline has passed, a source.TimeoutError of repoURL's host.
func (f *fetches) get(ctx context.Context, rel types.NamespacedName, key, repoURL string, timeout time.Duration,
	fetch func(context.Context) (located, error)) (located, time.Duration, error) {
	now := time.Now()
	f.mu.Lock()
	w := f.waits[rel]
	if w == nil {
		if c, ok := f.fresh[key]; ok && now.Sub(c.at) < freshFor && exists(c.chart.path) {
			f.mu.Unlock()
			return c.chart, 0, nil
		}
	}
	if w != nil && w.key != key {
		// The spec changed: what was asked before is not waited for anymore.
		f.leave(rel, w)
		w = nil
	}
	if w == nil {
		w = &fetchWait{key: key, since: now, deadline: now.Add(timeout), timeout: timeout}
		w.flight = f.flights[key]
		if w.flight == nil {
			w.flight = f.start(key, rel.Namespace, fetch)
		}
		w.flight.wait(rel, w.deadline)
		f.waits[rel] = w
	}
	// While it holds, the reconcile takes the fetch's result itself: the fetch does not queue it.
	w.holding = true
	fl := w.flight
	f.mu.Unlock()

	until := fl.started.Add(f.hold)
	if w.deadline.Before(until) {
		until = w.deadline
	}
	hold := time.NewTimer(max(until.Sub(now), 0))
	defer hold.Stop()
	select {
	case <-fl.done:
	case <-ctx.Done():
	case <-hold.C:
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	w.holding = false
	select {
	case <-fl.done:
		if f.waits[rel] == w {
			delete(f.waits, rel)
		}
		if errors.Is(fl.err, context.Canceled) {
			// Canceled at the latest deadline of those that asked, this one's included.
			return located{}, time.Since(w.since), source.DeadlineError(repoURL, w.timeout)
		}
		return fl.chart, time.Since(w.since), fl.err
	default:
	}
	if ctx.Err() != nil {
		return located{}, time.Since(w.since), ctx.Err()
	}
	if time.Now().Before(w.deadline) {
		return located{}, time.Since(w.since), &FetchPendingError{Deadline: w.deadline}
	}
	f.leave(rel, w)
	return located{}, time.Since(w.since), source.DeadlineError(repoURL, w.timeout)
}

// start starts the fetch of key, for a Release of namespace ns; f.mu is held.
func (f *fetches) start(key, ns string, fetch func(context.Context) (located, error)) *chartFlight {
	ctx, cancel := context.WithTimeout(context.Background(), maxFetch)
	fl := &chartFlight{done: make(chan struct{}), started: time.Now(), cancel: cancel, waiters: map[types.NamespacedName]struct{}{}}
	fl.timer = time.AfterFunc(maxFetch, cancel)
	f.flights[key] = fl
	f.sweep()
	go func() {
		defer cancel()
		chart, err := f.run(ctx, ns, fetch)
		f.mu.Lock()
		fl.chart, fl.err = chart, err
		if err == nil {
			f.fresh[key] = freshChart{chart: chart, at: time.Now()}
		}
		fl.timer.Stop()
		if f.flights[key] == fl {
			delete(f.flights, key)
		}
		close(fl.done)
		var wake []types.NamespacedName
		for n := range fl.waiters {
			if w := f.waits[n]; w == nil || w.flight != fl || !w.holding {
				wake = append(wake, n)
			}
		}
		fl.waiters = nil
		q := f.queue
		f.mu.Unlock()
		if q != nil {
			for _, n := range wake {
				q.Add(reconcile.Request{NamespacedName: n})
			}
		}
	}()
	return fl
}

// run runs fetch, for a Release of namespace ns, once the slots give ns its turn, or returns
// ctx's error when ctx ends first.
func (f *fetches) run(ctx context.Context, ns string, fetch func(context.Context) (located, error)) (located, error) {
	release, err := f.slots.Acquire(ctx, ns)
	if err != nil {
		return located{}, err
	}
	defer release()
	return fetch(ctx)
}

// exists says a file is at path (a cached chart the cache may have evicted since).
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// wait adds rel, whose deadline is until, to those waiting for fl, whose fetch then goes on at
// least until then; f.mu is held.
func (fl *chartFlight) wait(rel types.NamespacedName, until time.Time) {
	if fl.waiters != nil {
		fl.waiters[rel] = struct{}{}
	}
	if until.After(fl.until) {
		fl.until = until
		fl.timer.Reset(time.Until(until))
	}
}

// leave ends rel's wait w before its fetch ended: the fetch is canceled when nobody else waits
// for it; f.mu is held.
func (f *fetches) leave(rel types.NamespacedName, w *fetchWait) {
	if f.waits[rel] == w {
		delete(f.waits, rel)
	}
	fl := w.flight
	if fl.waiters == nil {
		return
	}
	delete(fl.waiters, rel)
	if len(fl.waiters) == 0 {
		fl.cancel()
	}
}

// sweep drops the waits of Releases that did not come back for their fetch's result (deleted,
// say) by their deadline, and the fresh charts that are fresh no more; f.mu is held.
func (f *fetches) sweep() {
	now := time.Now()
	for key, c := range f.fresh {
		if now.Sub(c.at) >= freshFor {
			delete(f.fresh, key)
		}
	}
	for rel, w := range f.waits {
		select {
		case <-w.flight.done:
			if now.After(w.deadline) {
				delete(f.waits, rel)
			}
		default:
		}
	}
}

// fetchKey names the fetch of ref with a's credentials, TLS material and verification material
// (the keyring, the whole of cosign's: key, identity, issuer, trusted root, or notation's trust
// policy and trust store): Releases share a
// fetch, and its proof, only when they ask for the same chart with the same access, verified
// the same way.
func fetchKey(ref chartRef, a chartAccess) string {
	d := sha256.New()
	var c provenance.CosignOptions
	if a.Cosign != nil {
		c = *a.Cosign
	}
	for _, s := range []string{ref.Ref, ref.RepoURL, ref.Version, a.Username, a.Password,
		string(a.TLS.CA), string(a.TLS.Cert), string(a.TLS.Key), string(a.Keyring),
		string(c.PublicKey), c.CertificateIdentity, c.CertificateIdentityRegexp,
		c.CertificateOIDCIssuer, c.CertificateOIDCIssuerRegexp, string(c.TrustedRoot)} {
		fmt.Fprintf(d, "%d:%s", len(s), s)
	}
	if n := a.Notation; n != nil {
		fmt.Fprintf(d, "notation%d:%s", len(n.TrustPolicy), n.TrustPolicy)
		for _, c := range n.Certificates {
			for _, s := range []string{c.Type, c.Store, c.Name, string(c.Data)} {
				fmt.Fprintf(d, "%d:%s", len(s), s)
			}
		}
	}
	fmt.Fprintf(d, "%t%t%t%t%t", ref.PlainHTTP, ref.PassCredentials, ref.Verify != "", a.Cosign != nil, a.Notation != nil)
	return fmt.Sprintf("%x", d.Sum(nil))
}
