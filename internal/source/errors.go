package source

import "fmt"

// Error is a chart reference that could not be resolved or fetched. Err is Helm's error; the
// caller words what to do from it.
type Error struct {
	// Ref is the reference as given.
	Ref string
	// Repo is the repository URL given with the reference (--repo), if any.
	Repo string
	// Version is the version constraint asked for; empty means the latest stable version.
	Version string
	Err     error
}

func (e *Error) Error() string {
	what := e.Ref
	if e.Repo != "" {
		what = fmt.Sprintf("%s in repository %s", e.Ref, e.Repo)
	}
	if e.Version != "" {
		what = fmt.Sprintf("%s version %q", what, e.Version)
	}
	return fmt.Sprintf("chart %s: %v", what, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }
