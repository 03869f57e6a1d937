// Package yamlbound measures what a YAML (or JSON) document expands to once its aliases are
// expanded, without expanding them, so that a document can be refused before anything converts
// it: a converter (sigs.k8s.io/yaml, Helm's loaders, client-go's kubeconfig loader) copies an
// aliased node at every alias, and a small document of a long string and many aliases of it
// becomes gigabytes.
//
// Check parses the document to a node tree (which holds each anchored node once) and counts the
// nodes and scalar bytes of its expansion, once per anchor: its cost is that of one parse,
// whatever the document expands to.
package yamlbound

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	yaml "go.yaml.in/yaml/v3"
)

// Limits bound what a document (all the documents of a stream together) expands to.
type Limits struct {
	// Nodes bounds the nodes of the expansion: every scalar, map key, map and list.
	Nodes int64
	// Bytes bounds the bytes of the expansion's scalars (keys and values).
	Bytes int64
}

// DefaultLimits are the bounds of a process that reads its user's own files (the CLI): far above
// any real values file, index or manifest, and far below what exhausts a workstation.
func DefaultLimits() Limits {
	return Limits{Nodes: 8 << 20, Bytes: 256 << 20}
}

// ManyTenantsLimits are the bounds of a process that reads what many tenants write (the
// controller): a document converted at these bounds costs some tens of MiB while it is
// converted, and the largest real documents are well within them (an index of 4 MiB, the largest
// the controller takes, is some 250,000 nodes and 3 MiB of scalars; a chart's values, some
// thousands of nodes; a large CRD, some 50,000).
func ManyTenantsLimits() Limits {
	return Limits{Nodes: 512 << 10, Bytes: 16 << 20}
}

// Less returns the limits left once s was spent of l: what several documents share.
func (l Limits) Less(s Size) Limits {
	left := func(limit, spent int64) int64 {
		if limit == 0 {
			return 0
		}
		return max(limit-spent, 1)
	}
	return Limits{Nodes: left(l.Nodes, s.Nodes), Bytes: left(l.Bytes, s.Bytes)}
}

// Size is what a document expands to.
type Size struct {
	Nodes int64
	Bytes int64
}

// LimitError says that a document expands to more than a limit. It never holds the document's
// content.
type LimitError struct {
	// Measure is "nodes" or "bytes".
	Measure string
	// Size is what the document expands to, math.MaxInt64 when that is more than an int64.
	Size  int64
	Limit int64
}

func (e *LimitError) Error() string {
	size := strconv.FormatInt(e.Size, 10)
	if e.Size == math.MaxInt64 {
		size = "more than " + size
	}
	what := "scalar bytes"
	if e.Measure == "nodes" {
		what = "nodes"
	}
	return fmt.Sprintf("expands to %s %s once its aliases are expanded, over the limit of %d", size, what, e.Limit)
}

// SyntaxError says a document is not YAML. It holds the line only: a parser's message can quote
// the content.
type SyntaxError struct {
	Line int // 0 when unknown
}

func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("not YAML: error at line %d (the parser's message is left out, it can quote the content)", e.Line)
	}
	return "not YAML (the parser's message is left out, it can quote the content)"
}

// Check measures what data, a stream of one or more YAML documents, expands to, and returns a
// *LimitError when it is more than limits allow, or a *SyntaxError when data is not YAML.
// A zero limit is no limit.
func Check(data []byte, limits Limits) (Size, error) {
	var total Size
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, syntaxError(err)
		}
		m := measurer{memo: map[*yaml.Node]*Size{}}
		s, err := m.measure(&doc)
		if err != nil {
			return total, err
		}
		total = Size{Nodes: add(total.Nodes, s.Nodes), Bytes: add(total.Bytes, s.Bytes)}
		if limits.Nodes > 0 && total.Nodes > limits.Nodes {
			return total, &LimitError{Measure: "nodes", Size: total.Nodes, Limit: limits.Nodes}
		}
		if limits.Bytes > 0 && total.Bytes > limits.Bytes {
			return total, &LimitError{Measure: "bytes", Size: total.Bytes, Limit: limits.Bytes}
		}
	}
}

// errCycle is an alias inside the node it names, which the parser refuses already.
var errCycle = &SyntaxError{}

// measurer counts a document's expansion, remembering the expansion of each anchored node.
type measurer struct {
	// memo holds the size of anchored nodes measured, nil while one is being measured.
	memo map[*yaml.Node]*Size
}

// measure returns what n expands to. Its recursion follows the tree as written (an alias is
// measured once, through memo), so its depth is the document's, which the parser bounds.
func (m *measurer) measure(n *yaml.Node) (Size, error) {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return Size{}, errCycle
		}
		return m.measure(n.Alias)
	}
	if n.Anchor != "" {
		if s, seen := m.memo[n]; seen {
			if s == nil {
				return Size{}, errCycle
			}
			return *s, nil
		}
		m.memo[n] = nil
	}
	s := Size{Nodes: 1, Bytes: int64(len(n.Value))}
	if n.Kind == yaml.DocumentNode {
		s = Size{}
	}
	for _, c := range n.Content {
		cs, err := m.measure(c)
		if err != nil {
			return Size{}, err
		}
		s = Size{Nodes: add(s.Nodes, cs.Nodes), Bytes: add(s.Bytes, cs.Bytes)}
	}
	if n.Anchor != "" {
		m.memo[n] = &s
	}
	return s, nil
}

// add adds two sizes, staying at math.MaxInt64 rather than overflowing.
func add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// syntaxError keeps the line of a parser's error and nothing else of it.
func syntaxError(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return &SyntaxError{}
	}
	var line int
	if _, scanErr := fmt.Sscanf(err.Error(), "yaml: line %d:", &line); scanErr != nil {
		line = 0
	}
	return &SyntaxError{Line: line}
}
