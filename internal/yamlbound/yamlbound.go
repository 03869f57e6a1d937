// Package yamlbound bounds what a YAML document becomes once its aliases are resolved. A parser
// that converts YAML to JSON or to Go values (sigs.k8s.io/yaml, Helm's loaders) copies the node
// an alias names at every alias: 2,000 aliases of a 500 KiB string are a 1 GB document, though
// the text is half a megabyte. Check counts the nodes and bytes a document's aliases add to it,
// on a tree whose aliases stay pointers, before anything converts it. What the text itself holds
// is bounded by its size, which its reader bounds.
package yamlbound

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Limits bound what the aliases of one document (or stream of documents) add to it once they are
// expanded: the copies of the nodes they name.
type Limits struct {
	// Nodes is the most nodes (scalars, mappings, sequences) the aliases may add.
	Nodes int64
	// Bytes is the most bytes of scalars (keys and values) the aliases may add.
	Bytes int64
}

// Tenant are the limits of what one tenant gives a controller shared by many: far above what the
// aliases of a values file, kubeconfig or object add (an object of the API server is at most some
// 1.5 MiB), and far below what would grow the controller.
var Tenant = Limits{Nodes: 250_000, Bytes: 8 << 20}

// Local are the limits of what a user gives berth on their own machine (values files, charts):
// what no real document reaches, and what a laptop holds.
var Local = Limits{Nodes: 4_000_000, Bytes: 256 << 20}

// ExpansionError is a document whose aliases expand it past a limit.
type ExpansionError struct {
	Limits Limits
	// Measure is "nodes" or "bytes": the limit passed.
	Measure string
	// Aliases is how many aliases the document holds.
	Aliases int64
}

func (e *ExpansionError) Error() string {
	limit := e.Limits.Nodes
	if e.Measure == "bytes" {
		limit = e.Limits.Bytes
	}
	return fmt.Sprintf("its YAML aliases (%d so far) add more than the %d %s allowed once expanded", e.Aliases, limit, e.Measure)
}

// CycleError is a document with an alias inside the node it names: it expands without end.
type CycleError struct{ Anchor string }

func (e *CycleError) Error() string {
	return fmt.Sprintf("the YAML anchor %q holds an alias of itself", e.Anchor)
}

// SyntaxError is a document with anchors and aliases that does not parse, so that what its
// aliases expand to cannot be counted. Err's message is left out: a parser's message can quote
// the content.
type SyntaxError struct {
	// Line is the line of the error, 0 when unknown.
	Line int
}

func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("its YAML does not parse (error at line %d), so its aliases cannot be counted", e.Line)
	}
	return "its YAML does not parse, so its aliases cannot be counted"
}

// Check returns nil when the aliases of data, one YAML document or a stream of them, add at most l
// once they are expanded; otherwise an *ExpansionError, a *CycleError or a *SyntaxError. A
// document without both an anchor (&) and an alias (*) has nothing to expand and is not parsed.
// The count costs one parse: each anchored node is sized once, however many aliases name it.
func Check(data []byte, l Limits) error {
	if bytes.IndexByte(data, '&') < 0 || bytes.IndexByte(data, '*') < 0 {
		return nil
	}
	return check(bytes.NewReader(data), l)
}

// CheckString is Check of a string, copying nothing.
func CheckString(data string, l Limits) error {
	if strings.IndexByte(data, '&') < 0 || strings.IndexByte(data, '*') < 0 {
		return nil
	}
	return check(strings.NewReader(data), l)
}

func check(r io.Reader, l Limits) error {
	dec := yaml.NewDecoder(r)
	c := counter{limits: l, sizes: map[*yaml.Node]size{}, open: map[*yaml.Node]bool{}}
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return &SyntaxError{Line: lineOf(err)}
		}
		if _, err := c.size(&doc); err != nil {
			return err
		}
	}
}

// size is what a node expands to.
type size struct{ nodes, bytes int64 }

// add adds b to a, saturating far above any limit.
func (a size) add(b size) size {
	const most = 1 << 62
	a.nodes, a.bytes = min(a.nodes+b.nodes, most), min(a.bytes+b.bytes, most)
	return a
}

// counter counts what aliases add, remembering the expanded size of every anchored node.
type counter struct {
	limits Limits
	// added is what the aliases seen so far add: each adds the expanded size of what it names
	// (itself counted as one node of the text).
	added   size
	aliases int64
	sizes   map[*yaml.Node]size
	open    map[*yaml.Node]bool
}

func (c *counter) check() error {
	s := c.added
	switch {
	case s.nodes > c.limits.Nodes:
		return &ExpansionError{Limits: c.limits, Measure: "nodes", Aliases: c.aliases}
	case s.bytes > c.limits.Bytes:
		return &ExpansionError{Limits: c.limits, Measure: "bytes", Aliases: c.aliases}
	}
	return nil
}

// size returns what n expands to, and an error as soon as its aliases add more than the limits.
func (c *counter) size(n *yaml.Node) (size, error) {
	if n.Kind == yaml.AliasNode {
		c.aliases++
		if n.Alias == nil {
			return size{nodes: 1}, nil
		}
		if c.open[n.Alias] {
			return size{}, &CycleError{Anchor: n.Value}
		}
		s, ok := c.sizes[n.Alias]
		if !ok { // an anchor is defined before its aliases, so this is not reached
			var err error
			if s, err = c.size(n.Alias); err != nil {
				return size{}, err
			}
		}
		c.added = c.added.add(s)
		return s, c.check()
	}
	if s, ok := c.sizes[n]; ok {
		return s, nil
	}
	c.open[n] = true
	defer delete(c.open, n)
	s := size{nodes: 1, bytes: int64(len(n.Value))}
	for _, child := range n.Content {
		cs, err := c.size(child)
		if err != nil {
			return size{}, err
		}
		s = s.add(cs)
	}
	if n.Anchor != "" {
		c.sizes[n] = s
	}
	return s, nil
}

// yamlLine finds the line number in a YAML parser's message.
var yamlLine = regexp.MustCompile(`line (\d+)`)

func lineOf(err error) int {
	var line int
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		fmt.Sscan(m[1], &line)
	}
	return line
}
