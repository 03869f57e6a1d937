package controller_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/releasetest"
)

// TestMetricsEndpoint scrapes the metrics endpoint of a running controller: berth_releases counts
// its Releases by condition, beside controller-runtime's reconcile metrics, and /readyz answers
// once the controller knows its Releases. The endpoint is HTTPS and answers only a token the API
// server authenticates and authorizes for get on /metrics.
func TestMetricsEndpoint(t *testing.T) {
	env := testenv.New(t)
	installCRD(t, env)
	c := startClient(t, env)
	metricsAddr, probeAddr := freeAddress(t), freeAddress(t)
	mgr, err := controller.NewManager(env.Config, controller.Options{
		Namespace: env.Namespace, MetricsBindAddress: metricsAddr, HealthProbeBindAddress: probeAddr,
		CacheDir: t.TempDir(), Logger: logr.FromSlogHandler(slog.NewTextHandler(t.Output(), nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("controller: %v", err)
		}
	})

	url := "https://" + metricsAddr + "/metrics"
	token := metricsReader(t, env)
	deployer(t, env, "deployer")
	if err := c.Create(t.Context(), smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, webChart(t)), "deployer")); err != nil {
		t.Fatal(err)
	}
	// A second Release whose chart repository does not answer: Ready False.
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	broken := smallestRelease(t, env.Namespace, down.URL, "deployer")
	broken.Name = "broken"
	if err := c.Create(t.Context(), broken); err != nil {
		t.Fatal(err)
	}
	web := waitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))
	waitFor(t, c, env.Namespace, "broken", "is not ready", func(rel *v1alpha1.Release) bool {
		cond := condition(rel, controller.ConditionReady)
		return cond != nil && cond.Status == metav1.ConditionFalse
	})

	want := map[string]float64{
		"Ready/True": 1, "Ready/False": 1, "Ready/Unknown": 0,
		"Reconciling/True": 0, "Reconciling/False": 2, "Reconciling/Unknown": 0,
		"Stalled/True": 0, "Stalled/False": 2, "Stalled/Unknown": 0,
	}
	var families map[string]*dto.MetricFamily
	var got map[string]float64
	waitUntil(t, "berth_releases counts both Releases", func() bool {
		families = scrape(t, url, token)
		got = releaseGauge(families)
		return fmt.Sprint(got) == fmt.Sprint(want)
	})
	if f := families["controller_runtime_reconcile_total"]; f == nil || len(f.GetMetric()) == 0 {
		t.Error("the metrics endpoint serves no controller_runtime_reconcile_total")
	}
	if code := statusCode(t, url, ""); code != http.StatusUnauthorized {
		t.Errorf("metrics without a token: %d, want %d", code, http.StatusUnauthorized)
	}
	if code := statusCode(t, url, accountToken(t, env, "nosy")); code != http.StatusForbidden {
		t.Errorf("metrics with the token of an account that may not read them: %d, want %d", code, http.StatusForbidden)
	}
	resp, err := http.Get("http://" + probeAddr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz of a controller whose Releases are reconciled: %s", resp.Status)
	}

	// Deleted: the gauge follows the cache.
	deleteRelease(t, c, web)
	want["Ready/True"], want["Reconciling/False"], want["Stalled/False"] = 0, 1, 1
	waitUntil(t, "berth_releases counts the Release left", func() bool {
		got = releaseGauge(scrape(t, url, token))
		return fmt.Sprint(got) == fmt.Sprint(want)
	})
	deleteRelease(t, c, broken)
}

// freeAddress returns a loopback address with a port free at the time of the call.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// metricsReader returns the token of a ServiceAccount bound to a ClusterRole that may get
// /metrics, as a Prometheus would be.
func metricsReader(t *testing.T, env *testenv.Env) string {
	t.Helper()
	name := "metrics-reader-" + env.Namespace
	rbac := env.Client.RbacV1()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	if _, err := rbac.ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: env.Namespace}}}
	if _, err := rbac.ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rbac.ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = rbac.ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return accountToken(t, env, "prometheus")
}

// accountToken creates the ServiceAccount name in the test's namespace and returns a token the
// API server issues for it.
func accountToken(t *testing.T, env *testenv.Env, name string) string {
	t.Helper()
	if _, err := env.Client.CoreV1().ServiceAccounts(env.Namespace).Create(t.Context(), serviceAccount(name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := env.Client.CoreV1().ServiceAccounts(env.Namespace).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// get requests url with token (none when empty); the endpoint's certificate is self-signed.
func get(url, token string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return c.Do(req)
}

// statusCode is the HTTP status of a request of url with token.
func statusCode(t *testing.T, url, token string) int {
	t.Helper()
	resp, err := get(url, token)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// scrape reads the metric families of a Prometheus endpoint with token; none while it does not
// answer.
func scrape(t *testing.T, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := get(url, token)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse the metrics of %s: %v", url, err)
	}
	return families
}

// releaseGauge is berth_releases as condition/status: value.
func releaseGauge(families map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range families["berth_releases"].GetMetric() {
		out[label(m, "condition")+"/"+label(m, "status")] = m.GetGauge().GetValue()
	}
	return out
}
