package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
)

// Shard is the share of the Releases one controller serves: those its label selector selects.
// Kubernetes spreads the work: each shard's controller watches and caches only its own Releases,
// and elects its leader with a Lease of its own.
type Shard struct {
	selector labels.Selector
}

// SelectorError says a --watch-label-selector is not a label selector.
type SelectorError struct {
	Selector string
	Err      error
}

func (e *SelectorError) Error() string {
	return fmt.Sprintf("%q is not a label selector: %v", e.Selector, e.Err)
}

func (e *SelectorError) Unwrap() error { return e.Err }

// ParseShard parses a label selector in Kubernetes' syntax (sharding.berth.dev/key=shard1,
// !sharding.berth.dev/key); "" selects every Release.
func ParseShard(selector string) (Shard, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return Shard{}, &SelectorError{Selector: selector, Err: err}
	}
	return Shard{selector: sel}, nil
}

// All says the shard is every Release: the controller is not sharded.
func (s Shard) All() bool { return s.selector == nil || s.selector.Empty() }

// Selector is the shard's selector in its canonical form (requirements sorted by key), "" for
// every Release.
func (s Shard) Selector() string {
	if s.All() {
		return ""
	}
	return s.selector.String()
}

// ID is a short, stable name of the shard: the first 8 hexadecimal digits of the SHA-256 of its
// canonical selector, or "all".
func (s Shard) ID() string {
	if s.All() {
		return "all"
	}
	sum := sha256.Sum256([]byte(s.Selector()))
	return hex.EncodeToString(sum[:])[:8]
}

// LeaseName is the name of the shard's leader election Lease: berth-controller.berth.dev for
// every Release, berth-controller-ID.berth.dev for a shard. The replicas of one shard contend
// for it; two shards never do.
func (s Shard) LeaseName() string {
	if s.All() {
		return Name + ".berth.dev"
	}
	return Name + "-" + s.ID() + ".berth.dev"
}
