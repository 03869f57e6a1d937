package version

import (
	"runtime/debug"
	"testing"
)

func TestString(t *testing.T) {
	tests := []struct {
		name string
		info Info
		want string
	}{
		{"no revision", Info{Version: "dev", GoVersion: "go1.26.8"}, "berth dev (go1.26.8)"},
		{
			"revision",
			Info{Version: "v1.0.0", GoVersion: "go1.26.8", Revision: "0123456789abcdef0123"},
			"berth v1.0.0 (go1.26.8, rev 0123456789ab)",
		},
		{
			"modified",
			Info{Version: "dev", GoVersion: "go1.26.8", Revision: "abc", Modified: true},
			"berth dev (go1.26.8, rev abc-dirty)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.info.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "deadbeef"},
		{Key: "vcs.modified", Value: "true"},
	}}
	got := fromBuildInfo(Info{Version: "dev"}, bi)
	if got.Revision != "deadbeef" || !got.Modified {
		t.Errorf("fromBuildInfo() = %+v, want revision deadbeef, modified", got)
	}
}
