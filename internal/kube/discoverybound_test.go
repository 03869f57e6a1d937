package kube

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/berthdev/berth/internal/kube/kubetest"
)

// fakeAPIServer pretends to be an API server that lists groups group versions
// (g0.example.com/v1, ...), each of whose resource lists is padded to pad bytes. With
// aggregated, it answers /api and /apis with aggregated discovery when asked for it.
type fakeAPIServer struct {
	groups     int
	pad        int
	aggregated bool
	// asked counts the requests of a group version; inFlight and most the ones in flight, and
	// the most at once.
	asked, inFlight, most atomic.Int64
}

func (s *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	aggregated := s.aggregated && strings.Contains(r.Header.Get("Accept"), "as=APIGroupDiscoveryList")
	switch {
	case r.URL.Path == "/version":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"major":"1","minor":"31","gitVersion":"v1.31.0"}`)
	case r.URL.Path == "/api" && aggregated:
		w.Header().Set("Content-Type", kubetest.AggregatedType)
		io.WriteString(w, `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","items":[]}`)
	case r.URL.Path == "/api":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"APIVersions","versions":[]}`)
	case r.URL.Path == "/apis":
		kubetest.WriteGroups(w, s.groups, aggregated)
	case strings.HasPrefix(r.URL.Path, "/apis/"):
		n := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
		}
		s.asked.Add(1)
		gv := strings.TrimPrefix(r.URL.Path, "/apis/")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"kind":"APIResourceList","groupVersion":%q,"resources":[{"name":"things","namespaced":true,"kind":"Thing","verbs":["get"],"shortNames":[%q]}]}`,
			gv, strings.Repeat("x", s.pad))
	default:
		http.NotFound(w, r)
	}
}

// TestDiscoveryBounded: a server that lists more group versions than MaxDiscoveryGroupVersions
// is refused before any of them is asked; one whose answers pass MaxDiscoveryBytes together is
// refused as they are read, and asked no further; the group versions are asked at most
// discoveryFetches at once; a cluster of a usual size is read whole. A cluster the user names
// is read within DefaultDiscoveryLimits, ten times as many group versions.
func TestDiscoveryBounded(t *testing.T) {
	cases := []struct {
		name   string
		server *fakeAPIServer
		// groupVersions and bytes say which limit the discovery is refused at, if any.
		groupVersions int
		bytes         bool
		// maxAsked bounds the group versions asked.
		maxAsked int64
		// local reads it within DefaultDiscoveryLimits, as a cluster the user names.
		local bool
	}{
		{name: "5,000 group versions", server: &fakeAPIServer{groups: 5_000}, groupVersions: 5_000},
		{name: "5,000 group versions, aggregated", server: &fakeAPIServer{groups: 5_000, aggregated: true}, groupVersions: 5_000},
		{name: "50,000 group versions", server: &fakeAPIServer{groups: 50_000}, bytes: true},
		{name: "50,000 group versions, aggregated", server: &fakeAPIServer{groups: 50_000, aggregated: true}, bytes: true},
		{name: "900 answers of 64 KiB", server: &fakeAPIServer{groups: 900, pad: 64 << 10}, bytes: true,
			maxAsked: MaxDiscoveryBytes/(64<<10) + discoveryFetches},
		{name: "a large cluster", server: &fakeAPIServer{groups: 400, pad: 1 << 10}, maxAsked: 400},
		{name: "devcluster's size", server: &fakeAPIServer{groups: 30}, maxAsked: 30},
		{name: "a large cluster, aggregated", server: &fakeAPIServer{groups: 400, aggregated: true}},
		{name: "5,000 group versions of a cluster the user names", server: &fakeAPIServer{groups: 5_000, aggregated: true}, local: true},
		{name: "50,000 group versions of a cluster the user names", server: &fakeAPIServer{groups: 50_000}, groupVersions: 50_000, local: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.server)
			defer srv.Close()
			limits, limitBytes := RemoteDiscoveryLimits(), "4 MiB"
			if c.local {
				limits, limitBytes = DefaultDiscoveryLimits(), "64 MiB"
			}
			clients, err := NewClientsWithin(&rest.Config{Host: srv.URL}, "default", limits)
			if err != nil {
				t.Fatal(err)
			}
			_, lists, err := clients.Discovery.Client().ServerGroupsAndResources()
			asked := c.server.asked.Load()
			var large *DiscoveryTooLargeError
			switch {
			case c.groupVersions > 0 || c.bytes:
				if !errors.As(err, &large) {
					t.Fatalf("discovery: %v, want a *DiscoveryTooLargeError", err)
				}
				host := strings.TrimPrefix(srv.URL, "http://")
				if large.Host != host || large.GroupVersions != c.groupVersions {
					t.Errorf("error %+v, want host %s and %d group versions", large, host, c.groupVersions)
				}
				if !strings.Contains(err.Error(), host) || (c.bytes && !strings.Contains(err.Error(), limitBytes)) ||
					(!c.bytes && !strings.Contains(err.Error(), fmt.Sprint(limits.GroupVersions))) {
					t.Errorf("error %q, want it to name %s and the limit", err, host)
				}
				if _, err := clients.Mapper.RESTMapping(schema.GroupKind{Group: "g1.example.com", Kind: "Thing"}); !errors.As(err, &large) {
					t.Errorf("mapping: %v, want a *DiscoveryTooLargeError", err)
				}
			case err != nil:
				t.Fatalf("discovery: %v", err)
			case len(lists) != c.server.groups:
				t.Errorf("%d resource lists, want %d", len(lists), c.server.groups)
			}
			if asked > c.maxAsked {
				t.Errorf("%d group versions asked, want at most %d", asked, c.maxAsked)
			}
			if most := c.server.most.Load(); most > discoveryFetches {
				t.Errorf("%d group versions asked at once, want at most %d", most, discoveryFetches)
			}
		})
	}
}
