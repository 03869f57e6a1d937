package testenv

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

const (
	// serviceAccountTimeout bounds each wait for what the cluster publishes into a new namespace.
	serviceAccountTimeout = time.Minute
	// cleanupTimeout bounds the API calls made when a test ends.
	cleanupTimeout = 30 * time.Second
	// testAnnotation records, on a test's namespace, the test it belongs to.
	testAnnotation = "berth.dev/test"
)

// Env is a test's view of the package's cluster: its own namespace and clients.
type Env struct {
	// Namespace is created for the test and deleted when it ends.
	Namespace string
	// Kubeconfig is the path of the cluster's admin kubeconfig.
	Kubeconfig string
	// Config is the test's own copy of the admin client configuration.
	Config  *rest.Config
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// Mapper maps kinds to resources; it discovers on first use and again
	// when a kind is unknown, so CRDs created by the test are found.
	Mapper meta.ResettableRESTMapper

	auditLog string // the cluster's audit log, read by AuditEvents
}

// New creates a namespace for the test, named after it, waits until the
// namespace can hold Pods, and deletes it when the test ends. It needs Main
// to have started the package's cluster.
func New(t testing.TB) *Env {
	t.Helper()
	if pkgCluster == nil {
		t.Fatal("testenv.New: no cluster: call testenv.Main(m) from TestMain")
	}
	env, err := newEnv(pkgCluster)
	if err != nil {
		t.Fatalf("testenv.New: %v", err)
	}
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:        namespaceName(t.Name(), randomSuffix()),
		Annotations: map[string]string{testAnnotation: t.Name()},
	}}
	ns, err = env.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("testenv.New: create namespace: %v", err)
	}
	env.Namespace = ns.Name
	t.Cleanup(func() { env.cleanup(t) })

	if err := env.waitForServiceAccount(ctx); err != nil {
		t.Fatalf("testenv.New: %v", err)
	}
	return env
}

func newEnv(c *cluster) (*Env, error) {
	cfg := rest.CopyConfig(c.config)
	cfg.QPS, cfg.Burst = 100, 200
	cfg.UserAgent = "berth-testenv"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create dynamic client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	return &Env{Kubeconfig: c.kubeconfig, Config: cfg, Client: client, Dynamic: dyn, Mapper: mapper, auditLog: c.auditLog}, nil
}

// waitForServiceAccount waits for the namespace's default ServiceAccount, until which the
// ServiceAccount admission plugin rejects Pods, and for its kube-root-ca.crt ConfigMap: the
// cluster publishes both into every new namespace, and a test that compares the namespace
// before and after an operation must not see them arrive.
func (e *Env) waitForServiceAccount(ctx context.Context) error {
	for what, get := range map[string]func(context.Context) error{
		"ServiceAccount/" + e.Namespace + "/default": func(ctx context.Context) error {
			_, err := e.Client.CoreV1().ServiceAccounts(e.Namespace).Get(ctx, "default", metav1.GetOptions{})
			return err
		},
		"ConfigMap/" + e.Namespace + "/kube-root-ca.crt": func(ctx context.Context) error {
			_, err := e.Client.CoreV1().ConfigMaps(e.Namespace).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			return err
		},
	} {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, serviceAccountTimeout, true,
			func(ctx context.Context) (bool, error) {
				err := get(ctx)
				if apierrors.IsNotFound(err) {
					return false, nil
				}
				return err == nil, err
			})
		if err != nil {
			return fmt.Errorf("wait for %s: %w", what, err)
		}
	}
	return nil
}

// cleanup reports the namespace's events when the test failed and deletes the
// namespace without waiting for it to be gone.
func (e *Env) cleanup(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if t.Failed() {
		e.logEvents(ctx, t)
	}
	err := e.Client.CoreV1().Namespaces().Delete(ctx, e.Namespace, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("testenv: delete namespace %s: %v", e.Namespace, err)
	}
}

// logEvents writes the events of the test's namespace to the test log.
func (e *Env) logEvents(ctx context.Context, t testing.TB) {
	events, err := e.Client.CoreV1().Events(e.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("testenv: list events in %s: %v", e.Namespace, err)
		return
	}
	var b strings.Builder
	for _, ev := range events.Items {
		fmt.Fprintf(&b, "\n  %s %s/%s %s: %s", ev.Type, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Reason, ev.Message)
	}
	t.Logf("testenv: %d events in namespace %s:%s", len(events.Items), e.Namespace, b.String())
}

// maxNamespaceName is the longest name a namespace may have (a DNS-1123 label).
const maxNamespaceName = 63

// namespaceName derives a DNS-1123 label from a test name and a suffix:
// "TestUpgrade/HookFails" with suffix "x7k2p" becomes "upgrade-hook-fails-x7k2p".
func namespaceName(testName, suffix string) string {
	name := sanitize(strings.TrimPrefix(testName, "Test"))
	if name == "" {
		name = "test"
	}
	if limit := maxNamespaceName - len(suffix) - 1; len(name) > limit {
		name = strings.TrimRight(name[:limit], "-")
	}
	return name + "-" + suffix
}

// sanitize lowercases s, splits camel case words with hyphens and turns every
// run of other characters into one hyphen, trimming hyphens at both ends.
func sanitize(s string) string {
	var b strings.Builder
	runes := []rune(s)
	hyphen := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
			b.WriteByte('-')
		}
	}
	for i, r := range runes {
		switch {
		case r <= unicode.MaxASCII && unicode.IsUpper(r):
			if i > 0 && (unicode.IsLower(runes[i-1]) || unicode.IsDigit(runes[i-1]) ||
				(unicode.IsUpper(runes[i-1]) && i+1 < len(runes) && unicode.IsLower(runes[i+1]))) {
				hyphen()
			}
			b.WriteRune(unicode.ToLower(r))
		case r <= unicode.MaxASCII && (unicode.IsLower(r) || unicode.IsDigit(r)):
			b.WriteRune(r)
		default:
			hyphen()
		}
	}
	return strings.TrimRight(b.String(), "-")
}

// randomSuffix returns five random lowercase letters and digits.
func randomSuffix() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 5)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
