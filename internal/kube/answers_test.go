package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// guarded is a clientset of server, its answers guarded.
func guarded(t *testing.T, server *httptest.Server) *kubernetes.Clientset {
	t.Helper()
	cfg := &rest.Config{Host: server.URL}
	GuardAnswers(cfg)
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// stream writes n bytes of filler, in chunks, without holding them.
func stream(w io.Writer, n int) {
	chunk := []byte(strings.Repeat("a", 32<<10))
	for n > 0 {
		c := chunk[:min(n, len(chunk))]
		if _, err := w.Write(c); err != nil {
			return
		}
		n -= len(c)
	}
}

func TestGuardAnswersCutsWhatIsTooLong(t *testing.T) {
	t.Parallel()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/version":
			io.WriteString(w, `{"major":"1","minor":"31","gitVersion":"`)
			stream(w, MaxVersionAnswer)
			io.WriteString(w, `"}`)
		default: // a list of Secrets
			io.WriteString(w, `{"kind":"SecretList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"`)
			stream(w, MaxAnswer)
			io.WriteString(w, `"}}]}`)
		}
	}))
	defer server.Close()
	c := guarded(t, server)
	host := strings.TrimPrefix(server.URL, "http://")

	err := c.Discovery().RESTClient().Get().AbsPath("/version").Do(context.Background()).Error()
	var large *AnswerTooLargeError
	if !errors.As(err, &large) || large.Host != host || large.Limit != MaxVersionAnswer || !strings.Contains(err.Error(), "64 KiB") {
		t.Errorf("/version: error %v, want an *AnswerTooLargeError of %s at 64 KiB", err, host)
	}
	_, err = c.CoreV1().Secrets("a").List(context.Background(), metav1.ListOptions{})
	if !errors.As(err, &large) || large.Limit != MaxAnswer || !strings.Contains(err.Error(), "16 MiB") {
		t.Errorf("list: error %v, want an *AnswerTooLargeError at 16 MiB", err)
	}
}

func TestGuardAnswersCutsVersionUnderAPathPrefix(t *testing.T) {
	t.Parallel()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"major":"1","minor":"31","gitVersion":"`)
		stream(w, MaxVersionAnswer)
		io.WriteString(w, `"}`)
	}))
	defer server.Close()
	for _, prefix := range []string{"/prefix", "/a/b/", "/a/../prefix"} {
		cfg := &rest.Config{Host: server.URL + prefix}
		GuardAnswers(cfg)
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Discovery().ServerVersion()
		var large *AnswerTooLargeError
		if !errors.As(err, &large) || large.Limit != MaxVersionAnswer {
			t.Errorf("server %s: /version: error %v, want an *AnswerTooLargeError at 64 KiB", cfg.Host, err)
		}
	}
}

func TestGuardAnswersBoundsEachEventOfAWatch(t *testing.T) {
	t.Parallel()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		// Three small events, then one too long, whose lines are short.
		for i := range 3 {
			fmt.Fprintf(w, `{"type":"ADDED","object":{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s%d","resourceVersion":"%d"}}}`+"\n", i, i+1)
		}
		io.WriteString(w, `{"type":"ADDED","object":{"kind":"Secret","apiVersion":"v1","metadata":{"name":"big","annotations":{`)
		for i := 0; i < MaxAnswer/(16<<10)+2; i++ {
			fmt.Fprintf(w, "\"a%d\":\"%s\",\n", i, strings.Repeat("x", 16<<10))
		}
		io.WriteString(w, `"z":""}}}}`+"\n")
	}))
	defer server.Close()
	w, err := guarded(t, server).CoreV1().Secrets("a").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var names []string
	var last watch.Event
	for ev := range w.ResultChan() {
		last = ev
		if ev.Type == watch.Error {
			break
		}
		names = append(names, ev.Object.(metav1.Object).GetName())
	}
	if len(names) != 3 || last.Type != watch.Error {
		t.Errorf("events %v, last %v; want the three small ones, then an error", names, last.Type)
	}
}

func TestGuardAnswersKeepsNothingOfAnErrorButAStatus(t *testing.T) {
	t.Parallel()
	const marker = "MARKER-4f1c"
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/namespaces/a/secrets/text":
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, "internal data "+marker)
		case "/api/v1/namespaces/a/secrets/json":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"secret":"`+marker+`"}`)
		case "/api/v1/namespaces/a/secrets/status":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,`+
				`"message":"secrets \"status\" is forbidden","extra":"`+marker+`","details":{"name":"status","kind":"secrets","more":"`+marker+`"}}`)
		case "/api/v1/namespaces/a/secrets/moved":
			http.Redirect(w, r, "http://elsewhere.example.test/"+marker, http.StatusFound)
		}
	}))
	defer server.Close()
	c := guarded(t, server)
	host := strings.TrimPrefix(server.URL, "http://")
	for name, check := range map[string]func(error) bool{
		"text":   apierrors.IsInternalError,
		"json":   apierrors.IsNotFound,
		"status": apierrors.IsForbidden,
		"moved":  func(err error) bool { return err != nil },
	} {
		_, err := c.CoreV1().Secrets("a").Get(context.Background(), name, metav1.GetOptions{})
		if !check(err) {
			t.Errorf("%s: error %v (%T), not of the answer's code", name, err, err)
		}
		var status apierrors.APIStatus
		var all string
		if errors.As(err, &status) {
			all = fmt.Sprintf("%+v", status.Status())
		}
		if strings.Contains(err.Error(), marker) || strings.Contains(all, marker) {
			t.Errorf("%s: error %v (status %s) quotes the answer", name, err, all)
		}
		if name == "text" && !strings.Contains(err.Error(), "server "+host+" answered 500") {
			t.Errorf("text: error %v, want it to name the host and the code", err)
		}
		if name == "status" && !strings.Contains(err.Error(), `secrets "status" is forbidden`) {
			t.Errorf("status: error %v, want the Status's message", err)
		}
	}
}
