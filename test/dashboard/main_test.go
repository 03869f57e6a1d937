// Package dashboard tests berth dashboard in a real headless Chromium against a local control
// plane: the release list against berth list, a revision's diff, a blocked uninstall's webhook,
// a page that follows a Deployment becoming ready, actions with their confirmation and the API
// server's refusals, masked Secrets, hooks and the controller's Release objects. Each test saves
// screenshots of its pages (bin/artifacts, or BERTH_ARTIFACTS); docs/dashboard.md shows them.
package dashboard

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/dashboard"
	"github.com/berthdev/berth/internal/kube"
	"github.com/berthdev/berth/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// devclusterContext is the context the local control plane's kubeconfig names.
const devclusterContext = "devcluster"

// serve starts a dashboard on a free loopback port for the test's cluster, with the credentials
// of the admin kubeconfig (impersonating asUser when set), and returns its address.
func serve(t testing.TB, env *testenv.Env, opts dashboard.Options, asUser string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Flags = kube.Flags{Kubeconfig: env.Kubeconfig, AsUser: asUser, QPS: 100, Burst: 200}
	opts.Contexts, opts.Current = []string{devclusterContext}, devclusterContext
	opts.Holder = "berth dashboard test"
	srv, err := dashboard.New(opts, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String()
}

// releasePage is the address of a release's page.
func releasePage(base, namespace, name string) string {
	return base + "/#/r/" + devclusterContext + "/" + namespace + "/" + name
}
