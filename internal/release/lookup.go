package release

import "context"

// Lookup returns revision version of a release, or its newest revision when version is 0 or less,
// as Helm's status and get do.
func Lookup(ctx context.Context, r Reader, name string, version int) (*Release, error) {
	if version <= 0 {
		return r.Last(ctx, name)
	}
	return r.Get(ctx, name, version)
}
