// Package chartpkg makes, packages and signs chart directories with Helm's SDK, as helm create
// and helm package do, with one difference: a packaged chart keeps each Chart.yaml as it was
// written (fields Helm's metadata does not know, such as a dependency's depends-on, included),
// where Helm rewrites it from what it parsed.
package chartpkg

import (
	"fmt"
)

// ErrorKind says what is wrong with the input of Create or Package.
type ErrorKind int

const (
	// KindNoPath: the path names nothing.
	KindNoPath ErrorKind = iota + 1
	// KindNotChart: the path is not a chart directory (no Chart.yaml in it).
	KindNotChart
	// KindNoStarter: the starter names no chart, in the starters directory or as a path.
	KindNoStarter
	// KindNoKey: the keyring holds no private key of the name given for signing.
	KindNoKey
	// KindNoKeyring: the keyring to sign with cannot be read.
	KindNoKeyring
)

// Error is input Create or Package refused before writing anything.
type Error struct {
	Kind ErrorKind
	// Path is the chart directory, the starter or the keyring at fault.
	Path string
	// Name is the starter or the key, as given.
	Name string
	Err  error
}

func (e *Error) Error() string {
	switch e.Kind {
	case KindNoPath:
		return fmt.Sprintf("chart directory %s does not exist", e.Path)
	case KindNotChart:
		return fmt.Sprintf("%s is not a chart directory: it has no Chart.yaml", e.Path)
	case KindNoStarter:
		return fmt.Sprintf("starter %q not found: no chart at %s", e.Name, e.Path)
	case KindNoKeyring:
		return fmt.Sprintf("read keyring %s: %v", e.Path, e.Err)
	case KindNoKey:
		if e.Err != nil {
			return fmt.Sprintf("signing key %q in keyring %s: %v", e.Name, e.Path, e.Err)
		}
		return fmt.Sprintf("keyring %s has no private key %q", e.Path, e.Name)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }
