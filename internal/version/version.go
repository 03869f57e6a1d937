// Package version reports which build of berth is running.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release version, set at link time with
// -ldflags "-X github.com/berthdev/berth/internal/version.Version=v1.2.3".
var Version = "dev"

// Info describes a build of berth.
type Info struct {
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Revision  string `json:"revision,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
}

// Get returns the version information of the running binary.
func Get() Info {
	info := Info{Version: Version, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info = fromBuildInfo(info, bi)
	}
	return info
}

// fromBuildInfo adds the VCS revision recorded by the Go toolchain, when present.
func fromBuildInfo(info Info, bi *debug.BuildInfo) Info {
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String renders the information on one line, e.g. "berth dev (go1.26.8)"
// or "berth v1.0.0 (go1.26.8, rev 0123abcd4567)".
func (i Info) String() string {
	details := i.GoVersion
	if i.Revision != "" {
		rev := i.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if i.Modified {
			rev += "-dirty"
		}
		details += ", rev " + rev
	}
	return fmt.Sprintf("berth %s (%s)", i.Version, details)
}
