package testenv

import (
	"regexp"
	"strings"
	"testing"
)

func TestNamespaceName(t *testing.T) {
	tests := []struct {
		testName string
		want     string
	}{
		{"TestUpgrade", "upgrade-abcde"},
		{"TestUpgrade/HookFails", "upgrade-hook-fails-abcde"},
		{"TestUninstall/webhook_down#01", "uninstall-webhook-down-01-abcde"},
		{"TestCRDKinds", "crd-kinds-abcde"},
		{"TestHTTPProxy2Way", "http-proxy2-way-abcde"},
		{"Test", "test-abcde"},
		{"Test/ü__é", "test-abcde"},
		{"Example_underscores", "example-underscores-abcde"},
		{"Test" + strings.Repeat("A", 100), strings.Repeat("a", 57) + "-abcde"},
		{"Test" + strings.Repeat("Ab", 40), strings.TrimSuffix(strings.Repeat("ab-", 19), "-") + "-abcde"},
	}
	label := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	for _, tt := range tests {
		t.Run(tt.testName, func(t *testing.T) {
			got := namespaceName(tt.testName, "abcde")
			if got != tt.want {
				t.Errorf("namespaceName(%q) = %q, want %q", tt.testName, got, tt.want)
			}
			if len(got) > maxNamespaceName || !label.MatchString(got) {
				t.Errorf("namespaceName(%q) = %q is not a DNS-1123 label", tt.testName, got)
			}
		})
	}
}

func TestRandomSuffix(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9]{5}$`)
	seen := map[string]bool{}
	for range 20 {
		s := randomSuffix()
		if !valid.MatchString(s) {
			t.Fatalf("randomSuffix() = %q, want five lowercase letters or digits", s)
		}
		seen[s] = true
	}
	if len(seen) < 2 {
		t.Errorf("randomSuffix() returned %d distinct values in 20 calls", len(seen))
	}
}
