package testenv

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// auditTimeout bounds the wait for a request to show in the audit log.
const auditTimeout = 30 * time.Second

// auditPollInterval is how often the audit log is read again while waiting for a request.
const auditPollInterval = 10 * time.Millisecond

// AuditEvent is one request the API server received, as its audit log records it.
type AuditEvent struct {
	Verb string
	// APIGroup is empty for the core group.
	APIGroup    string
	Resource    string
	Subresource string
	Namespace   string
	// Name is the object's name; for a create, the name of the object in the request.
	Name      string
	UserAgent string
	// User is who the request acted as: the impersonated user when it impersonated one.
	User string
	// DryRun is true when the request asked for a dry run: it changed nothing.
	DryRun bool
}

// Write reports whether the request may have changed an object: a create, update, patch or
// delete that was not a dry run.
func (ev AuditEvent) Write() bool {
	switch ev.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return !ev.DryRun
	}
	return false
}

// String renders the request as "patch configmaps/settings", with the subresource and the
// dry run when there are: "update deployments/web/status (dry run)".
func (ev AuditEvent) String() string {
	s := ev.Verb + " " + ev.Resource
	if ev.Name != "" {
		s += "/" + ev.Name
	}
	if ev.Subresource != "" {
		s += "/" + ev.Subresource
	}
	if ev.DryRun {
		s += " (dry run)"
	}
	return s
}

// AuditMark is a point in the cluster's audit log: AuditEvents returns the requests after it.
type AuditMark struct {
	offset int64
}

// AuditMark marks the end of the cluster's audit log: every request the test makes from now on
// is logged after the mark.
func (e *Env) AuditMark(t testing.TB) AuditMark {
	t.Helper()
	info, err := os.Stat(e.auditLog)
	if errors.Is(err, os.ErrNotExist) {
		return AuditMark{}
	}
	if err != nil {
		t.Fatalf("testenv: AuditMark: %v", err)
	}
	return AuditMark{offset: info.Size()}
}

// AuditEvents returns, in the order they were logged, the requests on the test's namespace the
// API server logged since mark, made by any client, testenv's own clients included. Every
// request whose response ended before AuditEvents was called is among them: the API server logs
// a request before its response ends and the log is only appended to, so AuditEvents makes a
// request of its own (not returned) and reads the log until that request shows.
func (e *Env) AuditEvents(t testing.TB, since AuditMark) []AuditEvent {
	t.Helper()
	return e.auditEvents(t, since, func(ev AuditEvent) bool { return ev.Namespace == e.Namespace })
}

// ClusterAuditEvents is AuditEvents with the requests on cluster-scoped objects (CRDs, say) too,
// whoever made them: other tests share those kinds.
func (e *Env) ClusterAuditEvents(t testing.TB, since AuditMark) []AuditEvent {
	t.Helper()
	return e.auditEvents(t, since, func(ev AuditEvent) bool { return ev.Namespace == e.Namespace || ev.Namespace == "" })
}

// auditEvents returns the requests logged since mark for which keep is true.
func (e *Env) auditEvents(t testing.TB, since AuditMark, keep func(AuditEvent) bool) []AuditEvent {
	t.Helper()
	probe := "testenv-audit-probe-" + randomSuffix()
	_, err := e.Client.CoreV1().ConfigMaps(e.Namespace).Get(t.Context(), probe, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("testenv: AuditEvents: get ConfigMap/%s/%s: %v", e.Namespace, probe, err)
	}
	isProbe := func(ev AuditEvent) bool {
		return ev.Verb == "get" && ev.Resource == "configmaps" && ev.Namespace == e.Namespace && ev.Name == probe
	}
	r := &auditReader{path: e.auditLog, offset: since.offset}
	var out []AuditEvent
	err = wait.PollUntilContextTimeout(t.Context(), auditPollInterval, auditTimeout, true, func(ctx context.Context) (bool, error) {
		events, err := r.read()
		if err != nil {
			return false, err
		}
		for _, ev := range events {
			if isProbe(ev) {
				return true, nil
			}
			if keep(ev) {
				out = append(out, ev)
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("testenv: AuditEvents: wait for get ConfigMap/%s/%s in the audit log %s: %v", e.Namespace, probe, e.auditLog, err)
	}
	return out
}

// auditReader reads an audit log, one JSON event a line, as it grows.
type auditReader struct {
	path   string
	offset int64
	// aligned says offset is at the start of a line: a mark taken while the API server was
	// writing an event falls inside its line, which began before the mark and is skipped.
	aligned bool
}

// read returns the events of the complete lines written since the last read; a partial last
// line is read again next time.
func (r *auditReader) read() ([]AuditEvent, error) {
	f, err := os.Open(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	start := r.offset
	if !r.aligned && start > 0 {
		start-- // from the byte before the mark: the line the mark fell in, or the newline before it
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(f, 1<<20)
	if !r.aligned && start > 0 {
		rest, err := br.ReadBytes('\n')
		if err == io.EOF {
			return nil, nil // the line the mark fell in is not complete yet: read it again next time
		}
		if err != nil {
			return nil, err
		}
		r.offset = start + int64(len(rest))
	}
	r.aligned = true
	var events []AuditEvent
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return events, nil
		}
		if err != nil {
			return events, err
		}
		r.offset += int64(len(line))
		ev, err := parseAuditEvent(line)
		if err != nil {
			return events, fmt.Errorf("%s at byte %d: %w", r.path, r.offset-int64(len(line)), err)
		}
		events = append(events, ev)
	}
}

// auditLine is the part of an audit.k8s.io/v1 Event testenv reads.
type auditLine struct {
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ImpersonatedUser *struct {
		Username string `json:"username"`
	} `json:"impersonatedUser"`
	ObjectRef *struct {
		APIGroup    string `json:"apiGroup"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
}

// parseAuditEvent reads one line of the audit log.
func parseAuditEvent(line []byte) (AuditEvent, error) {
	var l auditLine
	if err := json.Unmarshal(line, &l); err != nil {
		return AuditEvent{}, fmt.Errorf("parse audit event: %w", err)
	}
	ev := AuditEvent{Verb: l.Verb, UserAgent: l.UserAgent, User: l.User.Username}
	if l.ImpersonatedUser != nil {
		ev.User = l.ImpersonatedUser.Username
	}
	if l.ObjectRef != nil {
		ev.APIGroup = l.ObjectRef.APIGroup
		ev.Resource = l.ObjectRef.Resource
		ev.Subresource = l.ObjectRef.Subresource
		ev.Namespace = l.ObjectRef.Namespace
		ev.Name = l.ObjectRef.Name
	}
	if u, err := url.ParseRequestURI(l.RequestURI); err == nil {
		ev.DryRun = u.Query().Has("dryRun")
	}
	return ev, nil
}
