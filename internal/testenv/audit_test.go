package testenv

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAuditReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	r := &auditReader{path: path}
	events, err := r.read()
	if err != nil || len(events) != 0 {
		t.Fatalf("read before the log exists: %v, %v; want no events and no error", events, err)
	}

	patch := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete",` +
		`"requestURI":"/api/v1/namespaces/ns/configmaps/settings?fieldManager=berth\u0026force=true","verb":"patch",` +
		`"userAgent":"berth","objectRef":{"resource":"configmaps","namespace":"ns","name":"settings","apiVersion":"v1"}}` + "\n"
	dryRun := `{"verb":"patch","requestURI":"/apis/apps/v1/namespaces/ns/deployments/web?dryRun=All\u0026fieldManager=berth",` +
		`"userAgent":"berth","objectRef":{"resource":"deployments","namespace":"ns","name":"web","apiGroup":"apps"}}` + "\n"
	status := `{"verb":"update","requestURI":"/apis/apps/v1/namespaces/ns/deployments/web/status",` +
		`"userAgent":"kube-controller-manager","objectRef":{"resource":"deployments","subresource":"status","namespace":"ns","name":"web","apiGroup":"apps"}}` + "\n"
	list := `{"verb":"list","requestURI":"/api/v1/nodes","userAgent":"kwok"` // not yet complete
	write(t, path, patch+dryRun+list)

	events, err = r.read()
	if err != nil {
		t.Fatal(err)
	}
	want := []AuditEvent{
		{Verb: "patch", Resource: "configmaps", Namespace: "ns", Name: "settings", UserAgent: "berth"},
		{Verb: "patch", APIGroup: "apps", Resource: "deployments", Namespace: "ns", Name: "web", UserAgent: "berth", DryRun: true},
	}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("first read (-want +got):\n%s", diff)
	}

	write(t, path, patch+dryRun+list+`,"objectRef":{"resource":"nodes"}}`+"\n"+status)
	events, err = r.read()
	if err != nil {
		t.Fatal(err)
	}
	want = []AuditEvent{
		{Verb: "list", Resource: "nodes", UserAgent: "kwok"},
		{Verb: "update", APIGroup: "apps", Resource: "deployments", Subresource: "status", Namespace: "ns", Name: "web", UserAgent: "kube-controller-manager"},
	}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("second read, of the lines completed and added since (-want +got):\n%s", diff)
	}

	write(t, path, patch+"not json\n")
	if _, err := (&auditReader{path: path}).read(); err == nil {
		t.Error("read of a line that is not JSON: got no error")
	}
}

func TestAuditEvent(t *testing.T) {
	tests := []struct {
		ev        AuditEvent
		write     bool
		rendering string
	}{
		{AuditEvent{Verb: "patch", Resource: "configmaps", Name: "settings"}, true, "patch configmaps/settings"},
		{AuditEvent{Verb: "patch", Resource: "configmaps", Name: "settings", DryRun: true}, false, "patch configmaps/settings (dry run)"},
		{AuditEvent{Verb: "create", Resource: "secrets", Name: "sh.helm.release.v1.web.v2"}, true, "create secrets/sh.helm.release.v1.web.v2"},
		{AuditEvent{Verb: "update", Resource: "deployments", Name: "web", Subresource: "status"}, true, "update deployments/web/status"},
		{AuditEvent{Verb: "delete", Resource: "leases", Name: "berth.web"}, true, "delete leases/berth.web"},
		{AuditEvent{Verb: "deletecollection", Resource: "pods"}, true, "deletecollection pods"},
		{AuditEvent{Verb: "get", Resource: "services", Name: "web"}, false, "get services/web"},
		{AuditEvent{Verb: "list", Resource: "secrets"}, false, "list secrets"},
		{AuditEvent{Verb: "watch", Resource: "pods"}, false, "watch pods"},
	}
	for _, tt := range tests {
		if got := tt.ev.Write(); got != tt.write {
			t.Errorf("%v.Write() = %v, want %v", tt.ev, got, tt.write)
		}
		if got := tt.ev.String(); got != tt.rendering {
			t.Errorf("String() = %q, want %q", got, tt.rendering)
		}
	}
}

// TestAuditReaderFromAMarkInsideALine: a mark taken while the API server was writing an event
// falls inside its line; reading from it skips that line (it began before the mark), and waits
// for the line's end when it is not written yet. A mark at a line's start skips nothing.
func TestAuditReaderFromAMarkInsideALine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	before := `{"verb":"get","userAgent":"before","objectRef":{"resource":"configmaps","namespace":"ns","name":"old"}}`
	after := `{"verb":"get","userAgent":"after","objectRef":{"resource":"configmaps","namespace":"ns","name":"new"}}` + "\n"
	mark := int64(len(before) / 2)

	write(t, path, before[:mark+3])
	r := &auditReader{path: path, offset: mark}
	if events, err := r.read(); err != nil || len(events) != 0 {
		t.Fatalf("read while the marked line is written: %v, %v; want nothing yet", events, err)
	}
	write(t, path, before+"\n"+after)
	events, err := r.read()
	if err != nil {
		t.Fatal(err)
	}
	if want := []AuditEvent{{Verb: "get", Resource: "configmaps", Namespace: "ns", Name: "new", UserAgent: "after"}}; !cmp.Equal(want, events) {
		t.Errorf("read from a mark inside a line: %+v, want only the line after it: %+v", events, want)
	}

	atStart := &auditReader{path: path, offset: int64(len(before) + 1)}
	if events, err := atStart.read(); err != nil || len(events) != 1 || events[0].UserAgent != "after" {
		t.Errorf("read from a mark at a line's start: %+v, %v; want the line after it", events, err)
	}
}
