package release

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/user"
	"runtime"
	"strconv"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcoordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"
)

// DefaultLeaseDuration is how long a lease that is not renewed stays held.
const DefaultLeaseDuration = 30 * time.Second

// Annotations of a release's Lease that say who holds it.
const (
	LeaseHostAnnotation    = "berth.dev/host"
	LeasePIDAnnotation     = "berth.dev/pid"
	LeaseCommandAnnotation = "berth.dev/command"
	LeaseWhoAnnotation     = "berth.dev/holder"
)

// LeaseKey is the name of the Lease that guards a release's operations: berth.release.NAME.
func LeaseKey(name string) string { return "berth.release." + name }

// Holder says who holds (or wants) a release's lease.
type Holder struct {
	// Identity is unique to one operation of one process; Acquire fills it in.
	Identity string
	// Who is who runs the operation, as the caller names itself: a user on a host
	// (alice@laptop), a controller's Pod (berth-system/berth-controller-7d9f).
	Who  string
	Host string
	PID  int
	// Command is the command line that runs the operation, for people.
	Command string
	// Since is when the lease was acquired; Renewed when it was last renewed.
	Since, Renewed time.Time
	// Duration is how long the lease stays held without renewal.
	Duration time.Duration
}

// Self describes this process running command, for a user: who is the user on this host
// (user@host). A caller that is not a user (a controller) sets Who itself.
func Self(command string) Holder {
	host, _ := os.Hostname()
	who := host
	if u, err := user.Current(); err == nil {
		who = u.Username + "@" + host
	}
	return Holder{Who: who, Host: host, PID: os.Getpid(), Command: command}
}

func (h Holder) String() string {
	if h.Who == "" {
		return fmt.Sprintf("%q (pid %d on host %s)", h.Command, h.PID, h.Host)
	}
	return fmt.Sprintf("%s running %q (pid %d on host %s)", h.Who, h.Command, h.PID, h.Host)
}

// HeldError says that another operation holds a release's lease.
type HeldError struct {
	Release, Namespace string
	Holder             Holder
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("release %q in namespace %q is being changed by %s since %s (Lease/%s/%s, renewed %s)",
		e.Release, e.Namespace, e.Holder, e.Holder.Since.Format(time.RFC3339), e.Namespace, LeaseKey(e.Release),
		e.Holder.Renewed.Format(time.RFC3339))
}

// MaxLeaseDuration is the longest a Lease is taken to stay held without renewal, whatever its
// leaseDurationSeconds says: a Lease is a plain object that anyone who may write Leases in the
// namespace can write, with a duration of a year. Capping it is safe for a real holder: berth
// writes DefaultLeaseDuration (30s) and renews every third of it, and a renewal is a change that
// Acquire sees and that starts the wait anew, so a live holder is never taken over; only a lease
// left unchanged for the cap is.
const MaxLeaseDuration = 2 * DefaultLeaseDuration

// DefaultLeasePoll is how often a lease another holds is read while it is watched.
const DefaultLeasePoll = time.Second

// Leases takes and gives back the Leases of the releases of one namespace.
type Leases struct {
	client    typedcoordinationv1.LeasesGetter
	namespace string
	// Duration is how long a lease this process takes stays held without renewal.
	Duration time.Duration
	// Poll is how often a lease another holds is read while it is watched.
	Poll time.Duration
	// Clock gives the times this process writes into its leases, and times what it sees of
	// others' (see Acquire).
	Clock clock.WithTicker
	// Host is this machine's name: a lease held by a process of this host that no longer runs is
	// free at once, without waiting for it to expire.
	Host string
}

// NewLeases returns the leases of the releases of namespace, kept through client (a clientset's
// CoordinationV1()).
func NewLeases(client typedcoordinationv1.LeasesGetter, namespace string) *Leases {
	host, _ := os.Hostname()
	return &Leases{client: client, namespace: namespace, Duration: DefaultLeaseDuration, Poll: DefaultLeasePoll,
		Clock: clock.RealClock{}, Host: host}
}

// Holder reads who holds a release's lease, and whether the lease looks live: held, renewed
// within its duration as the holder's clock tells against this one, and when held from this
// host, by a process that still runs. It returns nil when there is no lease. Looking live is a
// hint for people (berth status, berth doctor): one read cannot tell more, and Acquire never goes
// by it.
func (s *Leases) Holder(ctx context.Context, name string) (*Holder, bool, error) {
	obj, err := s.client.Leases(s.namespace).Get(ctx, LeaseKey(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("Lease/%s/%s: get: %w", s.namespace, LeaseKey(name), err)
	}
	h := holderOf(obj)
	looksLive := !s.gone(h) && !s.clock().Now().After(h.Renewed.Add(s.durationOf(h)))
	return &h, looksLive, nil
}

// Acquire takes the lease of release name for me. It creates the Lease, or takes it over from a
// holder that is gone: the Lease names none, or a process of this host that no longer runs (a
// killed berth, whose operation the caller then finishes), or its holder did not renew it while
// this process watched it for a whole lease duration.
//
// Whether a lease expired is judged by what this process sees, as client-go's leader election
// does: it notes the record it read and when it first read it, by its own monotonic clock, and
// the lease is expired once that record has not changed for the lease's duration. The holder's
// renewTime is never compared with this clock: with clocks 30 seconds apart that would take a
// live lease, or keep a dead one for the skew. A process that meets a lease once (a one-shot
// berth upgrade) therefore watches it, reading it every Poll, until it changes — renewed,
// released or taken: its holder is live, and Acquire returns a *HeldError — or until it has not
// changed for a lease duration: then it takes the lease over, with the resourceVersion it watched
// as the precondition, so that of two processes racing for it exactly one wins. Refusing a live
// lease thus takes up to a third of its duration (its holder renews it that often); taking over
// a dead one, its duration. ctx bounds the watch (the operation's deadline, or a signal): when it
// ends first, Acquire returns the *HeldError with ctx's cause.
func (s *Leases) Acquire(ctx context.Context, name string, me Holder) (*Lease, error) {
	me.Identity = identity(me)
	var seen observation
	for {
		// A lease watched is only read again: released while watched, its holder was live, and
		// creating it anew would take the release from under the refusal owed to its holder.
		l, cur, err := s.createOrRead(ctx, name, me, !seen.began())
		switch {
		case l != nil || err != nil:
			return l, err
		case cur == nil && seen.began():
			// Released while watched: its holder was live.
			return nil, &HeldError{Release: name, Namespace: s.namespace, Holder: seen.holder}
		case cur == nil:
			continue // released between the create and the read: create it again
		}
		h := holderOf(cur)
		now := s.clock().Now()
		if seen.see(cur, now) {
			return nil, &HeldError{Release: name, Namespace: s.namespace, Holder: h}
		}
		if s.gone(h) || seen.expired(now, s.durationOf(h)) {
			l, err := s.takeOver(ctx, name, me, cur)
			if errors.Is(err, errChanged) {
				continue // the next read says how: renewed, released or taken
			}
			return l, err
		}
		select {
		case <-ctx.Done():
			held := &HeldError{Release: name, Namespace: s.namespace, Holder: h}
			return nil, fmt.Errorf("%w; watched it for %s: %w", held, now.Sub(seen.since).Round(time.Millisecond), context.Cause(ctx))
		case <-s.clock().After(s.poll()):
		}
	}
}

// errChanged says a Lease changed between its read and a write conditional on that read.
var errChanged = errors.New("the lease changed")

// createOrRead creates the Lease held by me (with create), or reads the one that exists (cur);
// both are nil when there is none (it was deleted in between).
func (s *Leases) createOrRead(ctx context.Context, name string, me Holder, create bool) (l *Lease, cur *coordinationv1.Lease, err error) {
	client := s.client.Leases(s.namespace)
	if create {
		sent := s.clock().Now()
		created, err := client.Create(ctx, s.object(name, me, nil), metav1.CreateOptions{})
		if err == nil {
			return &Lease{leases: s, name: name, obj: created, confirmed: sent}, nil, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, nil, fmt.Errorf("Lease/%s/%s: create: %w", s.namespace, LeaseKey(name), err)
		}
	}
	cur, err = client.Get(ctx, LeaseKey(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("Lease/%s/%s: get: %w", s.namespace, LeaseKey(name), err)
	}
	return nil, cur, nil
}

// takeOver writes me as the holder of cur, on the precondition that cur is unchanged
// (errChanged otherwise).
func (s *Leases) takeOver(ctx context.Context, name string, me Holder, cur *coordinationv1.Lease) (*Lease, error) {
	sent := s.clock().Now()
	updated, err := s.client.Leases(s.namespace).Update(ctx, s.object(name, me, cur), metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil, errChanged
	}
	if err != nil {
		return nil, fmt.Errorf("Lease/%s/%s: take over: %w", s.namespace, LeaseKey(name), err)
	}
	return &Lease{leases: s, name: name, obj: updated, confirmed: sent}, nil
}

// object is the Lease held by me; over a Lease that exists (cur), it carries cur's
// resourceVersion as the precondition of the update.
func (s *Leases) object(name string, me Holder, cur *coordinationv1.Lease) *coordinationv1.Lease {
	now := metav1.NewMicroTime(s.clock().Now())
	seconds := int32(s.duration() / time.Second)
	transitions := int32(0)
	if cur != nil && cur.Spec.LeaseTransitions != nil {
		transitions = *cur.Spec.LeaseTransitions + 1
	}
	obj := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: LeaseKey(name), Namespace: s.namespace,
			Labels: map[string]string{"owner": "berth", "name": name},
			Annotations: map[string]string{
				LeaseHostAnnotation: me.Host, LeasePIDAnnotation: strconv.Itoa(me.PID), LeaseCommandAnnotation: me.Command, LeaseWhoAnnotation: me.Who,
			}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &me.Identity, LeaseDurationSeconds: &seconds,
			AcquireTime: &now, RenewTime: &now, LeaseTransitions: &transitions},
	}
	if cur != nil {
		obj.ResourceVersion = cur.ResourceVersion
	}
	return obj
}

// gone reports whether h is known to hold its lease no more without watching it: it names no
// holder, or a process of this host that no longer runs.
func (s *Leases) gone(h Holder) bool {
	return h.Identity == "" || (h.Host != "" && h.Host == s.Host && h.PID > 0 && !processRuns(h.PID))
}

func (s *Leases) clock() clock.WithTicker {
	if s.Clock == nil {
		return clock.RealClock{}
	}
	return s.Clock
}

func (s *Leases) duration() time.Duration {
	if s.Duration <= 0 {
		return DefaultLeaseDuration
	}
	return s.Duration
}

// durationOf is how long h's lease stays held without renewal: as its holder wrote it, at most
// MaxLeaseDuration.
func (s *Leases) durationOf(h Holder) time.Duration {
	if h.Duration <= 0 {
		return s.duration()
	}
	return min(h.Duration, MaxLeaseDuration)
}

func (s *Leases) poll() time.Duration {
	if s.Poll <= 0 {
		return DefaultLeasePoll
	}
	return s.Poll
}

// observation is what this process saw of a Lease another holds: the record it last read, and
// when, by this process's clock, it first read that record.
type observation struct {
	record string
	since  time.Time
	holder Holder
}

// began reports whether the Lease was read.
func (o *observation) began() bool { return !o.since.IsZero() }

// see notes a read of obj at now; it reports whether the Lease changed since the last read (never
// on the first).
func (o *observation) see(obj *coordinationv1.Lease, now time.Time) (changed bool) {
	rec := recordOf(obj)
	if o.began() && rec == o.record {
		return false
	}
	changed = o.began()
	o.record, o.since, o.holder = rec, now, holderOf(obj)
	return changed
}

// expired reports whether the Lease, as this process watched it, has not changed for d by now.
// Both times are this process's own (with time.Now's monotonic reading): the holder's clock
// plays no part.
func (o *observation) expired(now time.Time, d time.Duration) bool {
	return o.began() && now.Sub(o.since) >= d
}

// recordOf is what tells one state of a Lease from another: its resourceVersion, and its holder
// and renewTime should a client not tell the version.
func recordOf(obj *coordinationv1.Lease) string {
	h := holderOf(obj)
	return fmt.Sprintf("%s/%s/%s", obj.ResourceVersion, h.Identity, h.Renewed.Format(time.RFC3339Nano))
}

// holderOf reads who holds a Lease.
func holderOf(obj *coordinationv1.Lease) Holder {
	h := Holder{
		Host:    obj.Annotations[LeaseHostAnnotation],
		Command: obj.Annotations[LeaseCommandAnnotation],
		Who:     obj.Annotations[LeaseWhoAnnotation],
	}
	h.PID, _ = strconv.Atoi(obj.Annotations[LeasePIDAnnotation])
	if obj.Spec.HolderIdentity != nil {
		h.Identity = *obj.Spec.HolderIdentity
	}
	if obj.Spec.AcquireTime != nil {
		h.Since = obj.Spec.AcquireTime.Time
	}
	if obj.Spec.RenewTime != nil {
		h.Renewed = obj.Spec.RenewTime.Time
	}
	if obj.Spec.LeaseDurationSeconds != nil {
		h.Duration = time.Duration(*obj.Spec.LeaseDurationSeconds) * time.Second
	}
	return h
}

// identity is unique to one acquisition: host, pid and a random part.
func identity(me Holder) string {
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("%s/%d/%s", me.Host, me.PID, hex.EncodeToString(b))
}

// processRuns reports whether a process of this host runs with pid. Where that cannot be told,
// it says yes: the lease then only frees itself by expiring.
func processRuns(pid int) bool {
	if runtime.GOOS == "windows" {
		return true
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
