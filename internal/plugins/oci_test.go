package plugins

import (
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
