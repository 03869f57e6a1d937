package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// annotationLog is the text a simulated Pod's containers write: the kubelet serves it as each
// container's log once the container has started.
const annotationLog = annotationPrefix + "log"

// logServer is the simulated kubelet's HTTPS endpoint for container logs, which the API server
// reaches for pods/log (kubectl logs, client-go's GetLogs) at the node's InternalIP and kubelet
// port. A container's log is its Pod's devcluster.berth.dev/log annotation, the same for every
// instance of a restarted container; with follow, the stream stays open until the container has
// stopped running or the Pod is gone, as a kubelet's does. previous=true serves the log of the
// container's last terminated instance, and only for a container that has one.
type logServer struct {
	client kubernetes.Interface
}

// serveLogs starts the log server on a free port of nodeIP, with the certificate in certFile and
// keyFile, until ctx ends, and returns the port.
func serveLogs(ctx context.Context, client kubernetes.Interface, certFile, keyFile string) (int, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return 0, fmt.Errorf("kubelet serving certificate: %w", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(nodeIP, "0"))
	if err != nil {
		return 0, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /containerLogs/{namespace}/{pod}/{container}", &logServer{client: client})
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	go srv.ServeTLS(ln, "", "")
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (s *logServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	q := r.URL.Query()
	pod, err := s.client.CoreV1().Pods(ns).Get(r.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		http.Error(w, fmt.Sprintf("pod %s/%s not found", ns, name), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if !hasContainer(pod, container) {
		http.Error(w, fmt.Sprintf("container %s is not valid for pod %s", container, name), http.StatusBadRequest)
		return
	}
	previous, _ := strconv.ParseBool(q.Get("previous"))
	if previous && !restarted(pod, container) {
		http.Error(w, fmt.Sprintf("previous terminated container %q in pod %q not found", container, name), http.StatusBadRequest)
		return
	}
	if !started(pod, container) {
		http.Error(w, fmt.Sprintf("container %q in pod %q is waiting to start", container, name), http.StatusBadRequest)
		return
	}
	text := logText(pod.Annotations[annotationLog], q.Get("tailLines"), q.Get("limitBytes"))
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(text))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if follow, _ := strconv.ParseBool(q.Get("follow")); follow && !previous {
		s.whileRunning(r.Context(), pod, container)
	}
}

// whileRunning returns when the container of pod does not run (any more): it has terminated or
// waits to be restarted, the Pod is gone or ctx ends.
func (s *logServer) whileRunning(ctx context.Context, pod *corev1.Pod, container string) {
	if !running(pod, container) {
		return
	}
	w, err := s.client.CoreV1().Pods(pod.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", pod.Name).String(),
		ResourceVersion: pod.ResourceVersion,
	})
	if err != nil {
		return
	}
	defer w.Stop()
	for e := range w.ResultChan() {
		p, ok := e.Object.(*corev1.Pod)
		if !ok || p.UID != pod.UID || e.Type == watch.Deleted || !running(p, container) {
			return
		}
	}
}

// logText is text as a kubelet serves it: every line ends with a newline; tailLines and
// limitBytes, when given, keep its last lines and its first bytes.
func logText(text, tailLines, limitBytes string) string {
	if text == "" {
		return ""
	}
	lines := strings.SplitAfter(strings.TrimSuffix(text, "\n")+"\n", "\n")
	lines = lines[:len(lines)-1] // SplitAfter leaves an empty string after the last newline
	if n, err := strconv.Atoi(tailLines); err == nil && n >= 0 && n < len(lines) {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, "")
	if n, err := strconv.Atoi(limitBytes); err == nil && n >= 0 && n < len(out) {
		out = out[:n]
	}
	return out
}

func hasContainer(pod *corev1.Pod, name string) bool {
	match := func(c corev1.Container) bool { return c.Name == name }
	return slices.ContainsFunc(pod.Spec.Containers, match) || slices.ContainsFunc(pod.Spec.InitContainers, match)
}

func containerStatus(pod *corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	for _, cs := range append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...) {
		if cs.Name == name {
			return cs, true
		}
	}
	return corev1.ContainerStatus{}, false
}

// started reports whether the container has a log: it runs or ran, or, waiting to be restarted,
// an earlier instance of it ran (a kubelet then serves that instance's log).
func started(pod *corev1.Pod, name string) bool {
	s, ok := containerStatus(pod, name)
	return ok && (s.State.Running != nil || s.State.Terminated != nil || s.LastTerminationState.Terminated != nil)
}

// restarted reports whether the container has a previous instance, whose log previous=true asks.
func restarted(pod *corev1.Pod, name string) bool {
	s, ok := containerStatus(pod, name)
	return ok && s.LastTerminationState.Terminated != nil
}

func running(pod *corev1.Pod, name string) bool {
	s, ok := containerStatus(pod, name)
	return ok && s.State.Running != nil
}
