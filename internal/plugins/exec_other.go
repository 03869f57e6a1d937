//go:build !unix

package plugins

import "os/exec"

// killGroup leaves cmd as it is: without process groups, only the plugin's own process is
// killed when cmd's context ends.
func killGroup(*exec.Cmd) {}
