package cluster

import (
	"bufio"
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// LogLine is one line a hook's container wrote, as the kubelet served it while the hook ran.
type LogLine struct {
	Pod, Container, Line string
}

// logDrain bounds how long a hook's outcome waits for the lines its containers wrote last: a
// container's log stream ends soon after the container does.
const logDrain = 2 * time.Second

// maxLogLine bounds one line of a hook's log; a longer one is cut.
const maxLogLine = 64 << 10

// logFollower follows the logs of a hook's containers from the moment each starts, and tells each
// line to its callback. It follows each container of each Pod once.
type logFollower struct {
	c      *Client
	ctx    context.Context
	cancel context.CancelFunc
	line   func(LogLine)
	// mu guards seen and stopping, and orders every start of a stream before stop's wait.
	mu       sync.Mutex
	seen     map[string]bool
	stopping bool
	wg       sync.WaitGroup
}

// newLogFollower returns a follower of logs read through c, which has a client for them.
func newLogFollower(ctx context.Context, c *Client, line func(LogLine)) *logFollower {
	ctx, cancel := context.WithCancel(ctx)
	return &logFollower{c: c, ctx: ctx, cancel: cancel, line: line, seen: map[string]bool{}}
}

// note looks at a Pod of the hook, and starts following each of its containers that has started
// and is not followed yet.
func (l *logFollower) note(pod *unstructured.Unstructured) {
	for _, cs := range containerStatuses(pod) {
		if cs.state != "running" && cs.state != "terminated" {
			continue
		}
		key := string(pod.GetUID()) + "/" + cs.name
		l.mu.Lock()
		if !l.seen[key] && !l.stopping {
			l.seen[key] = true
			l.wg.Go(func() { l.follow(pod.GetNamespace(), pod.GetName(), cs.name) })
		}
		l.mu.Unlock()
	}
}

// watchJobPods follows the Pods of the Job with uid in namespace until the follower stops.
func (l *logFollower) watchJobPods(namespace, uid string) {
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = jobControllerUIDLabel + "=" + uid }
	inf := dynamicinformer.NewFilteredDynamicInformer(l.c.dynamic, podsResource, namespace, 0, cache.Indexers{}, tweak).Informer()
	note := func(obj any) {
		if pod, ok := obj.(*unstructured.Unstructured); ok {
			l.note(pod)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    note,
		UpdateFunc: func(_, obj any) { note(obj) },
	}); err != nil {
		return
	}
	go inf.Run(l.ctx.Done())
}

// follow streams one container's log, line by line, until it ends or the follower stops. A log
// the kubelet cannot serve is left out here: the hook's report says why when it matters.
func (l *logFollower) follow(namespace, pod, container string) {
	stream, err := l.c.podLogs.Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, Follow: true}).Stream(l.ctx)
	if err != nil {
		return
	}
	defer stream.Close()
	sc := bufio.NewScanner(stream)
	sc.Buffer(make([]byte, 0, 4096), maxLogLine)
	for sc.Scan() {
		l.line(LogLine{Pod: pod, Container: container, Line: sc.Text()})
	}
}

// stop waits, up to logDrain, for the streams of containers that ended to deliver their last
// lines, then stops every stream and watch.
func (l *logFollower) stop() {
	l.mu.Lock()
	l.stopping = true
	l.mu.Unlock()
	done := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(logDrain)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-l.ctx.Done():
	}
	l.cancel()
	l.wg.Wait()
}
