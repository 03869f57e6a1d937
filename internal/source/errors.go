package source

import "fmt"

// Error is a chart reference that could not be resolved or fetched. Err is Helm's error; Kind
// says what went wrong where berth can tell, so that the caller can word what to do.
type Error struct {
	// Ref is the reference as given.
	Ref string
	// Repo is the repository URL given with the reference (--repo), if any.
	Repo string
	// Version is the version constraint asked for; empty means the latest stable version.
	Version string
	// Kind is the cause, KindUnknown when it is none berth tells apart.
	Kind Kind
	// Host is the registry's HOST[:PORT] of an oci:// reference.
	Host string
	Err  error
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

// RegistryOp is an operation on an OCI registry other than fetching a chart.
type RegistryOp string

// The operations of RegistryError.
const (
	OpLogin  RegistryOp = "log in to"
	OpLogout RegistryOp = "log out of"
	OpPush   RegistryOp = "push to"
)

// RegistryError is a registry login, logout or push that failed. Err is Helm's error.
type RegistryError struct {
	Op RegistryOp
	// Host is the registry's HOST[:PORT].
	Host string
	// Ref is the oci:// reference pushed to, for OpPush.
	Ref  string
	Kind Kind
	Err  error
}

func (e *RegistryError) Error() string {
	target := e.Host
	if e.Ref != "" {
		target = e.Ref
	}
	return fmt.Sprintf("%s %s: %v", e.Op, target, e.Err)
}

func (e *RegistryError) Unwrap() error { return e.Err }
