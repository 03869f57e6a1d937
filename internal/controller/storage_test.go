package controller

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/berthdev/berth/internal/release"
)

func TestParseStorageDriver(t *testing.T) {
	for _, tt := range []struct {
		name string
		want release.Driver
		why  string // in the refusal; "" when accepted
	}{
		{"", release.DriverSecret, ""},
		{"secret", release.DriverSecret, ""},
		{"secrets", release.DriverSecret, ""},
		{"configmap", release.DriverConfigMap, ""},
		{"configmaps", release.DriverConfigMap, ""},
		{"memory", "", "forget every release when it restarts"},
		{"sql", "", "unknown release storage driver"},
	} {
		got, err := ParseStorageDriver(tt.name)
		if tt.why == "" {
			if err != nil || got != tt.want {
				t.Errorf("ParseStorageDriver(%q) = %q, %v; want %q", tt.name, got, err, tt.want)
			}
			continue
		}
		var refused *StorageDriverError
		if !errors.As(err, &refused) || refused.Name != tt.name {
			t.Errorf("ParseStorageDriver(%q) = %q, %v; want a StorageDriverError", tt.name, got, err)
			continue
		}
		msg := err.Error()
		for _, want := range []string{tt.why, `HELM_DRIVER="` + tt.name + `"`, "storageDriver", "secret (the default) or configmap"} {
			if !strings.Contains(msg, want) {
				t.Errorf("refusal of %q: %q does not say %q", tt.name, msg, want)
			}
		}
	}
}

// TestNewManagerRefusesAStorageDriver: a controller asked to keep records with a driver it
// keeps none with is refused before it connects to anything.
func TestNewManagerRefusesAStorageDriver(t *testing.T) {
	_, err := NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, Options{StorageDriver: release.DriverMemory})
	if refused := new(StorageDriverError); !errors.As(err, &refused) {
		t.Errorf("NewManager with the memory driver: %v, want a StorageDriverError", err)
	}
}
