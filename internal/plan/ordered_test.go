package plan

import (
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/sequence"
)

func stepIDs(p *Plan) string {
	var ids []string
	for _, s := range p.Steps {
		ids = append(ids, s.ID)
	}
	return strings.Join(ids, " ")
}

func TestBuildOrdered(t *testing.T) {
	desired := objs(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: db-config, namespace: ns}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: db, namespace: ns}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: ns}
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: ns}
`)
	id := func(kind, name string) resource.Identity {
		g := ""
		if kind == "Deployment" {
			g = "apps"
		}
		return resource.Identity{Group: g, Kind: kind, Namespace: "ns", Name: name}
	}
	batches := []sequence.Batch{
		{Name: "web: group database", Objects: []resource.Identity{id("ConfigMap", "db-config"), id("Deployment", "db")}},
		{Name: "web", Objects: []resource.Identity{id("Deployment", "app"), id("Service", "app")}},
	}
	p, err := Build(Input{Desired: desired, Batches: batches})
	if err != nil {
		t.Fatal(err)
	}
	want := "apply/batch-1/ConfigMap apply/batch-1/Deployment.apps wait-ready/batch-1 apply/batch-2/Service apply/batch-2/Deployment.apps wait-ready/batch-2"
	if got := stepIDs(p); got != want {
		t.Errorf("install steps:\n%s\nwant\n%s", got, want)
	}

	p, err = Build(Input{Recorded: desired, Batches: batches})
	if err != nil {
		t.Fatal(err)
	}
	want = "delete/batch-2/Service delete/batch-2/Deployment.apps wait-absent/batch-2 delete/batch-1/Deployment.apps delete/batch-1/ConfigMap wait-absent/batch-1"
	if got := stepIDs(p); got != want {
		t.Errorf("uninstall steps:\n%s\nwant\n%s", got, want)
	}
}
