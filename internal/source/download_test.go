package source

import "testing"

// TestSameServer: a repository's credentials go with a chart's download only to the server the
// repository is on, as Helm's LocateChart decides it.
func TestSameServer(t *testing.T) {
	tests := []struct {
		repo, chart string
		want        bool
	}{
		{"https://charts.example.test", "https://charts.example.test/web-1.0.0.tgz", true},
		{"https://charts.example.test", "https://charts.example.test:443/web-1.0.0.tgz", true},
		{"http://charts.example.test:80/sub", "http://charts.example.test/web-1.0.0.tgz", true},
		{"https://charts.example.test", "http://charts.example.test/web-1.0.0.tgz", false},
		{"https://charts.example.test", "https://cdn.example.test/web-1.0.0.tgz", false},
		{"https://charts.example.test:8443", "https://charts.example.test/web-1.0.0.tgz", false},
		{"https://charts.example.test", "://bad", false},
	}
	for _, tt := range tests {
		if got := sameServer(tt.repo, tt.chart); got != tt.want {
			t.Errorf("sameServer(%q, %q) = %v, want %v", tt.repo, tt.chart, got, tt.want)
		}
	}
}
