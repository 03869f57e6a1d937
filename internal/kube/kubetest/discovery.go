// Package kubetest serves what an API server answers, for the tests of clients that must bound
// what a server a tenant runs can make them read.
package kubetest

import (
	"fmt"
	"io"
	"net/http"
)

// AggregatedType is the content type of aggregated discovery (apidiscovery.k8s.io/v2).
const AggregatedType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// WriteGroups writes /apis listing groups groups (g0.example.com, g1.example.com, ...) of one
// version v1 each, streamed: in aggregated discovery, each with one kind Thing, or in the legacy
// APIGroupList.
func WriteGroups(w http.ResponseWriter, groups int, aggregated bool) {
	if aggregated {
		w.Header().Set("Content-Type", AggregatedType)
		io.WriteString(w, `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","items":[`)
	} else {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[`)
	}
	for i := range groups {
		if i > 0 {
			io.WriteString(w, ",")
		}
		g := fmt.Sprintf("g%d.example.com", i)
		if aggregated {
			fmt.Fprintf(w, `{"metadata":{"name":%q},"versions":[{"version":"v1","resources":[{"resource":"things","responseKind":{"group":%q,"version":"v1","kind":"Thing"},"scope":"Namespaced","verbs":["get"]}]}]}`, g, g)
		} else {
			fmt.Fprintf(w, `{"name":%q,"versions":[{"groupVersion":"%s/v1","version":"v1"}],"preferredVersion":{"groupVersion":"%s/v1","version":"v1"}}`, g, g, g)
		}
	}
	io.WriteString(w, "]}")
}
