package hostile_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/controller/inputs"
	"github.com/berthdev/berth/internal/source"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// sizesRelease is a Release of the chart web 0.3.0 of repoURL, labelled for p's controller,
// acting as the ServiceAccount deployer, with the rest of its spec (YAML, indented by two).
func sizesRelease(p *controllerProcess, ns, name, repoURL, rest string) *v1alpha1.Release {
	return p.release(ns, name, `
  serviceAccountName: deployer
  timeout: 1m
  chart: {repository: "`+repoURL+`", name: web, version: "0.3.0"}
`+rest)
}

// sizesNotReady waits until the Release name is not Ready for its generation, and returns
// its Ready condition.
func sizesNotReady(t *testing.T, c client.Client, ns, name string) *metav1.Condition {
	t.Helper()
	rel := releasetest.WaitFor(t, c, ns, name, "is not Ready", func(rel *v1alpha1.Release) bool {
		cond := releasetest.Condition(rel, controller.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.ObservedGeneration == rel.Generation
	})
	cond := releasetest.Condition(rel, controller.ConditionReady)
	t.Logf("Release %s/%s: Ready %s, %s: %s", ns, name, cond.Status, cond.Reason, cond.Message)
	return cond
}

// sizesWebChart serves a repository of the chart web 0.3.0.
func sizesWebChart(t *testing.T) string {
	return releasetest.ServeCharts(t, berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {greeting: hello}\n",
	}))
}

// TestSizesTargetPath: a targetPath of 90 list indexes of 65536 (which would make the controller
// allocate gigabytes) is refused by the API server, by the CRD's length limit; one short enough
// for the CRD whose indexes add more list items than allowed is refused by the controller, by
// name, before anything renders; and the controller stays within its memory limit.
func TestSizesTargetPath(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	releasetest.Deployer(t, env, "deployer")
	repoURL := sizesWebChart(t)
	p := startController(t, env)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "values", Namespace: env.Namespace}, Data: map[string]string{"v": "x"}}
	if err := c.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	valuesAt := func(path string) string {
		return "  valuesFrom: [{kind: ConfigMap, name: values, key: v, targetPath: \"" + path + "\"}]\n"
	}

	ninety := "a" + strings.Repeat("[65536]", 90)
	err := c.Create(t.Context(), sizesRelease(p, env.Namespace, "ninety", repoURL, valuesAt(ninety)))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "targetPath") {
		t.Fatalf("create a Release with a targetPath of %d bytes: got %v, want the API server to refuse it as invalid", len(ninety), err)
	}

	thirty := "a" + strings.Repeat("[65536]", 30)
	if err := c.Create(t.Context(), sizesRelease(p, env.Namespace, "thirty", repoURL, valuesAt(thirty))); err != nil {
		t.Fatal(err)
	}
	cond := sizesNotReady(t, c, env.Namespace, "thirty")
	want := fmt.Sprintf("more than the %d allowed", inputs.MaxPathItems)
	if cond.Reason != controller.ReasonInvalidValues || !strings.Contains(cond.Message, "targetPath") || !strings.Contains(cond.Message, want) {
		t.Errorf("Release thirty: %s %q, want %s naming the targetPath and saying %q", cond.Reason, cond.Message, controller.ReasonInvalidValues, want)
	}
}

// TestSizesLargeIndex: a repository whose index is larger than the controller takes (9 MiB) is
// refused while it is read, naming its host and the limit, and the controller stays within its
// memory limit.
func TestSizesLargeIndex(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	releasetest.Deployer(t, env, "deployer")
	line := "# " + strings.Repeat("x", 1021) + "\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// No Content-Length: the limit holds while the body is read.
		w.Write([]byte("apiVersion: v1\nentries: {}\n"))
		for range 9 << 10 {
			if _, err := w.Write([]byte(line)); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	p := startController(t, env)
	if err := c.Create(t.Context(), sizesRelease(p, env.Namespace, "large", srv.URL, "")); err != nil {
		t.Fatal(err)
	}
	cond := sizesNotReady(t, c, env.Namespace, "large")
	host := strings.TrimPrefix(srv.URL, "http://")
	limit := fmt.Sprint(source.ManyTenantsMaxIndexBytes)
	if !strings.Contains(cond.Message, host) || !strings.Contains(cond.Message, limit) || !strings.Contains(cond.Message, "repository index") {
		t.Errorf("Release large: %s %q, want it to name the repository index of %s and the limit %s", cond.Reason, cond.Message, host, limit)
	}
}

// TestSizesCredentialsOverPlainHTTP: a Release of an http:// repository with credentials is
// refused by name (InsecureCredentials) before any request, and the repository sees no
// credentials; the same Release without them is installed.
func TestSizesCredentialsOverPlainHTTP(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	releasetest.Deployer(t, env, "deployer")
	repoURL := sizesWebChart(t)
	target, err := url.Parse(repoURL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var authorized, requests int
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		if r.Header.Get("Authorization") != "" {
			authorized++
		}
		mu.Unlock()
		http.Redirect(w, r, target.ResolveReference(&url.URL{Path: r.URL.Path}).String(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(proxy.Close)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "repo-creds", Namespace: env.Namespace},
		StringData: map[string]string{"username": "ci", "password": "Sup3r-S3cret"}}
	if err := c.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	p := startController(t, env)
	rel := sizesRelease(p, env.Namespace, "creds", proxy.URL, "")
	rel.Spec.Chart.Credentials = &v1alpha1.SecretReference{Name: "repo-creds"}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	cond := sizesNotReady(t, c, env.Namespace, "creds")
	if cond.Reason != controller.ReasonInsecureCredentials || !strings.Contains(cond.Message, proxy.URL) || !strings.Contains(cond.Message, "HTTPS") {
		t.Errorf("Release creds: %s %q, want %s naming %s and saying to use HTTPS", cond.Reason, cond.Message, controller.ReasonInsecureCredentials, proxy.URL)
	}
	if strings.Contains(cond.Message, "Sup3r") {
		t.Errorf("Release creds: the message %q holds the password", cond.Message)
	}
	if err := c.Create(t.Context(), sizesRelease(p, env.Namespace, "anonymous", proxy.URL, "")); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitFor(t, c, env.Namespace, "anonymous", "is Ready", func(rel *v1alpha1.Release) bool {
		cond := releasetest.Condition(rel, controller.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionTrue
	})
	mu.Lock()
	defer mu.Unlock()
	if requests == 0 || authorized != 0 {
		t.Errorf("the repository got %d requests, %d of them with credentials; want some, none with credentials", requests, authorized)
	}
}

// TestSizesChartContent: a packaged chart of a few kilobytes in a ConfigMap that decompresses to
// 60 MiB is refused by name before it is loaded, and the controller stays within its memory
// limit.
func TestSizesChartContent(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	releasetest.Deployer(t, env, "deployer")
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	for _, f := range []struct {
		name string
		size int
	}{{"web/Chart.yaml", 0}, {"web/templates/big.yaml", 60 << 20}} {
		data := []byte("apiVersion: v2\nname: web\nversion: 0.3.0\n")
		if f.size > 0 {
			data = make([]byte, f.size)
		}
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "chart", Namespace: env.Namespace}, BinaryData: map[string][]byte{"web.tgz": buf.Bytes()}}
	if err := c.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	p := startController(t, env)
	rel := sizesRelease(p, env.Namespace, "bomb", "https://unused.example", "")
	rel.Spec.Chart = v1alpha1.ChartSource{ConfigMapRef: &v1alpha1.KeyReference{Name: "chart", Key: "web.tgz"}}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	cond := sizesNotReady(t, c, env.Namespace, "bomb")
	limit := fmt.Sprint(controller.MaxChartContentBytes)
	if cond.Reason != controller.ReasonInvalidChart || !strings.Contains(cond.Message, "ConfigMap/"+env.Namespace+"/chart key web.tgz") ||
		!strings.Contains(cond.Message, limit) {
		t.Errorf("Release bomb: %s %q, want %s naming the ConfigMap's key and the limit %s", cond.Reason, cond.Message, controller.ReasonInvalidChart, limit)
	}
}
