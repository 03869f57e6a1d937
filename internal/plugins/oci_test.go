package plugins

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestParseOCIRef: the tag and plugin name of an oci:// reference, as Helm's registry client
// reads it, with --version as the tag of a reference without one.
func TestParseOCIRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ref, version     string
		wantRef, wantErr string
		wantName         string
	}{
		{ref: "oci://r.example/plugins/s3:1.0.0", wantRef: "r.example/plugins/s3:1.0.0", wantName: "s3"},
		{ref: "oci://r.example:5000/s3", version: "1.0.0", wantRef: "r.example:5000/s3:1.0.0", wantName: "s3"},
		{ref: "oci://r.example/s3:1.0.0+build", wantRef: "r.example/s3:1.0.0_build", wantName: "s3"},
		{ref: "oci://r.example/s3:1.0.0", version: "1.0.0", wantRef: "r.example/s3:1.0.0", wantName: "s3"},
		{ref: "oci://r.example/s3", wantErr: "has no tag"},
		{ref: "oci://r.example/s3:1.0.0", version: "2.0.0", wantErr: "differ"},
		{ref: "oci://r.example/S3:1.0.0", wantErr: "invalid reference"},
	}
	for _, tt := range tests {
		t.Run(tt.ref+"@"+tt.version, func(t *testing.T) {
			t.Parallel()
			r, name, err := parseOCIRef(tt.ref, tt.version)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseOCIRef: %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || r.String() != tt.wantRef || name != tt.wantName {
				t.Errorf("parseOCIRef: %s, %s, %v; want %s, %s", r, name, err, tt.wantRef, tt.wantName)
			}
		})
	}
}

// TestPullOCICancelled: a pull from a registry that does not answer ends when its context is
// cancelled, with the cancellation in its error.
func TestPullOCICancelled(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		cancel() // the request is under way and will get no answer
		<-t.Context().Done()
	}()
	_, err = PullOCI(ctx, "oci://"+l.Addr().String()+"/p:1.0.0", "", Registry{Client: &http.Client{}, PlainHTTP: true})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("PullOCI after cancellation: %v, want context.Canceled", err)
	}
	var oe *OCIError
	if !errors.As(err, &oe) || oe.Ref != "oci://"+l.Addr().String()+"/p:1.0.0" {
		t.Errorf("PullOCI's error does not name the reference: %v", err)
	}
}
