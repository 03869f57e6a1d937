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
	"sync"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcoordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
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

// Leases takes and gives back the Leases of the releases of one namespace.
type Leases struct {
	client    typedcoordinationv1.LeasesGetter
	namespace string
	// Duration is how long a lease stays held without renewal.
	Duration time.Duration
	// Now is the clock.
	Now func() time.Time
	// Host is this machine's name: a lease held by a process of this host that no longer runs is
	// free at once, without waiting for it to expire.
	Host string
}

// NewLeases returns the leases of the releases of namespace, kept through client (a clientset's
// CoordinationV1()).
func NewLeases(client typedcoordinationv1.LeasesGetter, namespace string) *Leases {
	host, _ := os.Hostname()
	return &Leases{client: client, namespace: namespace, Duration: DefaultLeaseDuration, Now: time.Now, Host: host}
}

// Lease is a release's lease while this process holds it.
type Lease struct {
	leases *Leases
	name   string
	mu     sync.Mutex
	obj    *coordinationv1.Lease
}

// Holder reads who holds a release's lease and whether the lease is live (held, renewed in time,
// and when held from this host, by a process that still runs). It returns nil when there is no
// lease.
func (s *Leases) Holder(ctx context.Context, name string) (*Holder, bool, error) {
	obj, err := s.client.Leases(s.namespace).Get(ctx, LeaseKey(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("Lease/%s/%s: get: %w", s.namespace, LeaseKey(name), err)
	}
	h := holderOf(obj)
	return &h, s.live(h), nil
}

// Acquire takes the lease of release name for me: it creates the Lease, or takes it over when
// its holder let it expire or, on this host, no longer runs. The resourceVersion of the Lease it
// read is a precondition of the takeover, so of two processes racing for one lease exactly one
// wins. A lease held by another live operation is a *HeldError.
func (s *Leases) Acquire(ctx context.Context, name string, me Holder) (*Lease, error) {
	key := LeaseKey(name)
	client := s.client.Leases(s.namespace)
	me.Identity = identity(me)
	for range 3 {
		obj := s.object(name, me, nil)
		created, err := client.Create(ctx, obj, metav1.CreateOptions{})
		if err == nil {
			return &Lease{leases: s, name: name, obj: created}, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("Lease/%s/%s: create: %w", s.namespace, key, err)
		}
		cur, err := client.Get(ctx, key, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // released in between
		}
		if err != nil {
			return nil, fmt.Errorf("Lease/%s/%s: get: %w", s.namespace, key, err)
		}
		if h := holderOf(cur); s.live(h) {
			return nil, &HeldError{Release: name, Namespace: s.namespace, Holder: h}
		}
		obj = s.object(name, me, cur)
		updated, err := client.Update(ctx, obj, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue // someone else took it first, or released it: look again
		}
		if err != nil {
			return nil, fmt.Errorf("Lease/%s/%s: take over: %w", s.namespace, key, err)
		}
		return &Lease{leases: s, name: name, obj: updated}, nil
	}
	return nil, fmt.Errorf("Lease/%s/%s: changed under every attempt to acquire it", s.namespace, key)
}

// object is the Lease held by me; over a Lease that exists (cur), it carries cur's
// resourceVersion as the precondition of the update.
func (s *Leases) object(name string, me Holder, cur *coordinationv1.Lease) *coordinationv1.Lease {
	now := metav1.NewMicroTime(s.now())
	seconds := int32(s.duration() / time.Second)
	transitions := int32(0)
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
		if cur.Spec.LeaseTransitions != nil {
			transitions = *cur.Spec.LeaseTransitions + 1
		}
	}
	return obj
}

// live reports whether h still holds its lease.
func (s *Leases) live(h Holder) bool {
	if h.Identity == "" || s.now().After(h.Renewed.Add(h.Duration)) {
		return false
	}
	if h.Host != "" && h.Host == s.Host && h.PID > 0 && !processRuns(h.PID) {
		return false
	}
	return true
}

func (s *Leases) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

func (s *Leases) duration() time.Duration {
	if s.Duration <= 0 {
		return DefaultLeaseDuration
	}
	return s.Duration
}

// Renew extends the lease. It fails when the lease was taken over or deleted.
func (l *Lease) Renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.obj == nil {
		return errors.New("lease already released")
	}
	obj := l.obj.DeepCopy()
	now := metav1.NewMicroTime(l.leases.now())
	obj.Spec.RenewTime = &now
	updated, err := l.leases.client.Leases(l.leases.namespace).Update(ctx, obj, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("Lease/%s/%s: renew: %w", l.leases.namespace, LeaseKey(l.name), err)
	}
	l.obj = updated
	return nil
}

// Keep renews the lease every third of its duration until stop is called. When a renewal fails
// because the lease was lost (taken over or deleted), or when the lease expired because renewals
// failed, lost is called once.
func (l *Lease) Keep(lost func(error)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(l.leases.duration() / 3)
		defer t.Stop()
		last := l.leases.now()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), l.leases.duration()/3)
			err := l.Renew(ctx)
			cancel()
			switch {
			case err == nil:
				last = l.leases.now()
			case apierrors.IsConflict(err) || apierrors.IsNotFound(err) || l.leases.now().After(last.Add(l.leases.duration())):
				lost(err)
				return
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// Release gives the lease back by deleting the Lease, provided it is still this holder's.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.obj == nil {
		return nil
	}
	obj := l.obj
	l.obj = nil
	err := l.leases.client.Leases(l.leases.namespace).Delete(ctx, obj.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &obj.UID, ResourceVersion: &obj.ResourceVersion}})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // released, or no longer ours
	}
	return fmt.Errorf("Lease/%s/%s: release: %w", l.leases.namespace, obj.Name, err)
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
