package controller_test

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/releasetest"
	"github.com/berthdev/berth/test/testca"
)

// servePrivateCharts serves over HTTPS, with a certificate of ca, a Helm chart repository of
// the packaged charts given that asks for basic auth with username and password; it returns the
// repository's URL.
func servePrivateCharts(t *testing.T, ca *testca.CA, username, password string, packages ...string) string {
	t.Helper()
	dir := t.TempDir()
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != username || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		files.ServeHTTP(w, r)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.ServerCert(t)}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	releasetest.WriteRepository(t, dir, srv.URL, packages...)
	return srv.URL
}

// TestReleaseFromPrivateRepository: a Release whose chart is in an HTTPS repository with basic
// auth and a CA of its own, with its credentials and CA in Secrets of its namespace. It waits
// for a missing tls Secret, is installed once it is there, reports a wrong password (after a
// rotation) as an authentication failure of the host without the password anywhere, and is
// Ready again once the password is put back.
func TestReleaseFromPrivateRepository(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	ca := testca.New(t)
	const password, wrong = "tenant-pw-1", "wrong-pw-2"
	repoURL := servePrivateCharts(t, ca, "tenant", password, webChart(t))
	host := strings.TrimPrefix(repoURL, "https://")
	createSecret(t, env, "repo-creds", map[string][]byte{"username": []byte("tenant"), "password": []byte(password)})

	rel := smallestRelease(t, env.Namespace, repoURL, "deployer")
	rel.Spec.Chart.Credentials = &v1alpha1.SecretReference{Name: "repo-creds"}
	rel.Spec.Chart.TLS = &v1alpha1.SecretReference{Name: "repo-tls"}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "waits for its tls Secret", notReadyWith(controller.ReasonCredentialsMissing))
	if msg := condition(got, controller.ConditionReady).Message; !strings.Contains(msg, "Secret/"+env.Namespace+"/repo-tls") || !strings.Contains(msg, "ca.crt") {
		t.Errorf("Ready message %q does not name the missing Secret and its key", msg)
	}

	createSecret(t, env, "repo-tls", map[string][]byte{"ca.crt": ca.PEM})
	waitFor(t, c, env.Namespace, "web", "is installed once its tls Secret is there", readyAt(1))

	setPassword := func(pw string) {
		t.Helper()
		patch, err := json.Marshal(map[string]any{"stringData": map[string]string{"password": pw}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Client.CoreV1().Secrets(env.Namespace).Patch(t.Context(), "repo-creds", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setPassword(wrong)
	got = waitFor(t, c, env.Namespace, "web", "reports that the repository refused the new password", notReadyWith(controller.ReasonAuthenticationFailed))
	msg := condition(got, controller.ConditionReady).Message
	for _, want := range []string{"authentication to " + host + " failed", "Secret/" + env.Namespace + "/repo-creds", "401 Unauthorized"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Ready message %q does not hold %q", msg, want)
		}
	}
	waitUntil(t, "a warning event says the authentication failed", func() bool {
		list, err := env.Client.EventsV1().Events(env.Namespace).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Release" && e.Reason == controller.ReasonAuthenticationFailed && strings.Contains(e.Note, host) {
				return true
			}
		}
		return false
	})
	assertNoPassword(t, env, c, password, wrong)

	setPassword(password)
	got = waitFor(t, c, env.Namespace, "web", "is Ready again with the right password", readyAt(1))
	deleteRelease(t, c, got)
}

// assertNoPassword checks that no Release of the test's namespace, and no Event there, holds
// one of the passwords.
func assertNoPassword(t *testing.T, env *testenv.Env, c client.Client, passwords ...string) {
	t.Helper()
	for what, text := range visibleTexts(t, env, c) {
		for _, pw := range passwords {
			if strings.Contains(text, pw) {
				t.Errorf("%s hold the password %q:\n%s", what, pw, text)
			}
		}
	}
}

// visibleTexts is what anyone who may read the test's namespace sees of the controller's work:
// its Releases, whole, and its Events (of both APIs), as JSON, by what they are.
func visibleTexts(t *testing.T, env *testenv.Env, c client.Client) map[string]string {
	t.Helper()
	var rels v1alpha1.ReleaseList
	if err := c.List(t.Context(), &rels, client.InNamespace(env.Namespace)); err != nil {
		t.Fatal(err)
	}
	releases, err := json.Marshal(rels)
	if err != nil {
		t.Fatal(err)
	}
	events, err := env.Client.EventsV1().Events(env.Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	coreEvents, err := env.Client.CoreV1().Events(env.Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventsJSON, err := json.Marshal([]any{events, coreEvents})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{"the Releases": string(releases), "the Events": string(eventsJSON)}
}
