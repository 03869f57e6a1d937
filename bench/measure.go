package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// process is what one run of a tool's command cost.
type process struct {
	Start, End time.Time
	// PeakRSS is the process's peak resident set size in bytes (getrusage's ru_maxrss).
	PeakRSS int64
	// PeakAnon is the most of it the process allocated (anonymous pages), sampled every 2 ms;
	// PeakFile the most that were pages of files it mapped (its binary's, mostly).
	PeakAnon, PeakFile int64
	// CPU is the processor time it took, user and system.
	CPU    time.Duration
	Output string
	Err    error
}

func (p process) Wall() time.Duration { return p.End.Sub(p.Start) }

// runProcess runs argv with env added to the harness's environment and measures it. It starts
// argv through berth-bench-measure (measurer): the kernel counts the peak memory of a process
// started by fork and exec from its parent's at that moment, and the harness (like any program
// linking client-go) is bigger than some of what it measures, where berth-bench-measure is tiny.
func runProcess(ctx context.Context, measurer string, env []string, argv ...string) process {
	report, err := os.CreateTemp("", "berth-bench-measure-")
	if err != nil {
		return process{Err: err}
	}
	report.Close()
	defer os.Remove(report.Name())
	cmd := exec.CommandContext(ctx, measurer, append([]string{"--report", report.Name(), "--"}, argv...)...)
	cmd.Env = append(os.Environ(), env...)
	p := process{Start: time.Now()}
	out := &stampedWriter{start: p.Start}
	cmd.Stdout = out
	cmd.Stderr = out
	err = cmd.Run()
	p.End = time.Now()
	p.Output = out.String()
	if err != nil {
		p.Err = fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, lastLines(p.Output, 20))
	}
	var m measurement
	data, rerr := os.ReadFile(report.Name())
	if rerr == nil {
		rerr = json.Unmarshal(data, &m)
	}
	if rerr != nil {
		p.Err = errors.Join(p.Err, fmt.Errorf("%s: no measurement: %v", strings.Join(argv, " "), rerr))
		return p
	}
	// The command's own span, without this binary's start.
	p.Start, p.End = m.Start, m.End
	p.PeakRSS, p.PeakAnon, p.PeakFile = m.PeakRSS, m.PeakAnon, m.PeakFile
	p.CPU = m.UserCPU + m.SystemCPU
	return p
}

// stampedWriter keeps what a command writes, each line prefixed with when it arrived, in
// seconds since start: a timeline of what the tool reported doing.
type stampedWriter struct {
	start time.Time
	mu    sync.Mutex
	buf   bytes.Buffer
	// mid is true while a line is partly written.
	mid bool
}

func (w *stampedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	stamp := fmt.Sprintf("%7.3fs ", time.Since(w.start).Seconds())
	for rest := b; len(rest) > 0; {
		if !w.mid {
			w.buf.WriteString(stamp)
		}
		line, after, found := bytes.Cut(rest, []byte("\n"))
		w.buf.Write(line)
		if found {
			w.buf.WriteByte('\n')
		}
		w.mid = !found
		rest = after
	}
	return len(b), nil
}

func (w *stampedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// measurement is what berth-bench-measure reports of the command it ran.
type measurement struct {
	Start     time.Time     `json:"start"`
	End       time.Time     `json:"end"`
	PeakRSS   int64         `json:"peak_rss_bytes"`
	PeakAnon  int64         `json:"peak_anon_bytes"`
	PeakFile  int64         `json:"peak_file_bytes"`
	UserCPU   time.Duration `json:"user_cpu_ns"`
	SystemCPU time.Duration `json:"system_cpu_ns"`
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// auditEvent is the part of an API server audit event the harness reads.
type auditEvent struct {
	UserAgent string    `json:"userAgent"`
	Verb      string    `json:"verb"`
	Received  time.Time `json:"requestReceivedTimestamp"`
	// Completed is when the response was complete (a watch's, when it ended).
	Completed  time.Time    `json:"stageTimestamp"`
	RequestURI string       `json:"requestURI"`
	ObjectRef  *auditObject `json:"objectRef"`
}

// auditObject is what an audit event says of the object a request is about.
type auditObject struct {
	Resource    string `json:"resource"`
	Subresource string `json:"subresource"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
}

// byVerb keys a request by its verb.
func byVerb(ev auditEvent) string { return ev.Verb }

// byVerbAndResource keys a request by its verb and resource (with its subresource): "patch
// releases/status".
func byVerbAndResource(ev auditEvent) string {
	if ev.ObjectRef == nil || ev.ObjectRef.Resource == "" {
		return ev.Verb
	}
	if ev.ObjectRef.Subresource != "" {
		return ev.Verb + " " + ev.ObjectRef.Resource + "/" + ev.ObjectRef.Subresource
	}
	return ev.Verb + " " + ev.ObjectRef.Resource
}

// auditLog reads the API server's audit log (one JSON event a line, one event a request) as it
// grows. It streams the log: it keeps in memory only the events received after the last
// count's window, which a later count may want, never the log's lines before it.
type auditLog struct {
	path   string
	offset int64
	// later are the events read that were received after the last count's window.
	later []auditEvent
}

// auditQuery is one count over the audit log: the requests of the clients whose user agent
// matches that the API server received from start to end, by key(event).
type auditQuery struct {
	start, end time.Time
	matches    func(userAgent string) bool
	key        func(auditEvent) string
	// keep says to keep the events counted, in Events.
	keep bool
	// Total and Counts are what countEach counted.
	Total  int
	Counts map[string]int
	Events []auditEvent
}

// add counts ev if the query wants it.
func (q *auditQuery) add(ev auditEvent) {
	if ev.Received.Before(q.start) || ev.Received.After(q.end) || !q.matches(ev.UserAgent) {
		return
	}
	if q.Counts == nil {
		q.Counts = map[string]int{}
	}
	q.Total++
	q.Counts[q.key(ev)]++
	if q.keep {
		q.Events = append(q.Events, ev)
	}
}

// countEach counts every query in one pass over the events kept from the last count and the
// lines written since, and forgets every event received before the latest end among qs.
func (a *auditLog) countEach(qs ...*auditQuery) error {
	var last time.Time
	for _, q := range qs {
		if q.Counts == nil {
			q.Counts = map[string]int{}
		}
		if q.end.After(last) {
			last = q.end
		}
	}
	var later []auditEvent
	take := func(ev auditEvent) {
		for _, q := range qs {
			q.add(ev)
		}
		if ev.Received.After(last) {
			later = append(later, ev)
		}
	}
	for _, ev := range a.later {
		take(ev)
	}
	f, err := os.Open(a.path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: its start, copied before the buffer is read
			// again, and the rest of it.
			start := append([]byte(nil), line...)
			var rest []byte
			rest, err = r.ReadBytes('\n')
			line = append(start, rest...)
		}
		if err == io.EOF {
			break // a partial line is read again next time
		}
		if err != nil {
			return err
		}
		a.offset += int64(len(line))
		var ev auditEvent
		if json.Unmarshal(line, &ev) == nil {
			take(ev)
		}
	}
	a.later = later
	return nil
}

// requests counts, by verb, the requests of the client whose user agent matches that the API
// server received between start and end, and forgets every event received before end.
func (a *auditLog) requests(start, end time.Time, matches func(userAgent string) bool) (int, map[string]int, error) {
	return a.count(start, end, matches, byVerb)
}

// count is requests with the requests counted under key(event) instead of their verb.
func (a *auditLog) count(start, end time.Time, matches func(userAgent string) bool, key func(auditEvent) string) (int, map[string]int, error) {
	q := &auditQuery{start: start, end: end, matches: matches, key: key}
	if err := a.countEach(q); err != nil {
		return 0, nil, err
	}
	return q.Total, q.Counts, nil
}

// userAgentOf returns the matcher of a tool's requests.
func userAgentOf(tool string) func(string) bool {
	return func(ua string) bool {
		switch tool {
		case "berth":
			return ua == "berth" || strings.HasPrefix(ua, "berth/")
		case "helm", helmAtBerthLimits:
			return strings.HasPrefix(ua, "Helm/")
		case "floor":
			return ua == floorUserAgent
		case "controller":
			return ua == controllerName || strings.HasPrefix(ua, controllerName+"/")
		}
		return false
	}
}
