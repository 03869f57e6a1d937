package sopsvalues

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/stores"
	yaml "go.yaml.in/yaml/v3"
)

// A SOPS document is read here into the tree SOPS decrypts: its branches (one a YAML document,
// one for JSON), with the comments SOPS keeps as items of their own, and its metadata, the
// top-level "sops" key. The tree must be the one SOPS's own YAML and JSON stores make of the
// same document, item for item: the document's MAC covers its values in the tree's order, and
// its comments are values too. SOPS's store packages are not linked: through its configuration
// package they bring its publishing to cloud storage, some 120 packages that every berth command
// would initialize as it starts (TestDocumentsAsSOPSReadsThem and FuzzDocumentsAsSOPSReadsThem
// hold the two readers to the same trees).

// loadDocument reads data, a document of format f, into the tree SOPS decrypts.
func loadDocument(data []byte, f Format) (sops.Tree, error) {
	read := yamlBranches
	if f == JSON {
		read = jsonBranches
	}
	branches, err := read(data)
	if err != nil {
		return sops.Tree{}, err
	}
	branches, metadata, err := stores.ExtractMetadata(branches, stores.MetadataOpts{Flatten: stores.MetadataFlattenNone})
	if err != nil {
		return sops.Tree{}, err
	}
	return sops.Tree{Branches: branches, Metadata: metadata}, nil
}

// emitDocument writes the decrypted branches as a plain document of format f: the same values in
// the same order, without the comments.
func emitDocument(branches sops.TreeBranches, f Format) ([]byte, error) {
	var b bytes.Buffer
	if f == JSON {
		if len(branches) != 1 {
			return nil, fmt.Errorf("a JSON document is one object, not %d", len(branches))
		}
		if err := writeJSON(&b, branches[0]); err != nil {
			return nil, err
		}
		// Laid out as the sops CLI writes it: one item a line.
		var out bytes.Buffer
		if err := json.Indent(&out, b.Bytes(), "", ""); err != nil {
			return nil, err
		}
		out.WriteByte('\n')
		return out.Bytes(), nil
	}
	enc := yaml.NewEncoder(&b)
	for _, branch := range branches {
		n, err := yamlNode(branch)
		if err != nil {
			return nil, err
		}
		if err := enc.Encode(n); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// yamlBranches reads each YAML document of data into a branch.
func yamlBranches(data []byte) (sops.TreeBranches, error) {
	if len(data) > 0 {
		// As SOPS: the first document read as a map, which refuses a key given twice.
		if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(map[string]any{}); err != nil {
			return nil, err
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out sops.TreeBranches
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		branch, err := yamlBranch(&doc, sops.TreeBranch{}, false)
		if err != nil {
			return nil, err
		}
		out = append(out, branch)
	}
}

// commentsOf are the lines of comment c, each without its leading '#'.
func commentsOf(c string, inline bool) []sops.Comment {
	var out []sops.Comment
	for line := range strings.SplitSeq(c, "\n") {
		if line != "" {
			out = append(out, sops.Comment{Value: line[1:], Inline: inline})
		}
	}
	return out
}

// withComments is b with the lines of comment c after it, each an item whose key is the comment.
func withComments(b sops.TreeBranch, c string, inline bool) sops.TreeBranch {
	for _, line := range commentsOf(c, inline) {
		b = append(b, sops.TreeItem{Key: line})
	}
	return b
}

// listComments is l with the lines of comment c after it.
func listComments(l []any, c string, inline bool) []any {
	for _, line := range commentsOf(c, inline) {
		l = append(l, line)
	}
	return l
}

// yamlBranch is b with the items of n, a document or a mapping (or an alias of one), after it.
// commented says n's own head, line and foot comments are already in b's parent.
func yamlBranch(n *yaml.Node, b sops.TreeBranch, commented bool) (sops.TreeBranch, error) {
	if !commented {
		b = withComments(b, n.HeadComment, false)
		b = withComments(b, n.LineComment, false)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			var err error
			if b, err = yamlBranch(c, b, false); err != nil {
				return nil, err
			}
		}
	case yaml.SequenceNode:
		return nil, errors.New("a YAML document that is a sequence is not a SOPS document")
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, value := n.Content[i], n.Content[i+1]
			b = withComments(b, key.HeadComment, false)
			b = withComments(b, key.LineComment, false)
			// A scalar's comments go around its item; a mapping's or a sequence's inside it.
			scalar := value.Kind == yaml.ScalarNode || value.Kind == yaml.AliasNode
			if scalar {
				b = withComments(b, value.HeadComment, false)
				b = withComments(b, value.LineComment, true)
			}
			var k any
			_ = key.Decode(&k)
			v, err := yamlValue(value, scalar)
			if err != nil {
				return nil, err
			}
			b = append(b, sops.TreeItem{Key: k, Value: v})
			if scalar {
				b = withComments(b, value.FootComment, false)
			}
			b = withComments(b, key.FootComment, false)
		}
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return b, nil // an empty document
		}
		return nil, errors.New("a YAML document that is a value is not a SOPS document")
	case yaml.AliasNode:
		var err error
		if b, err = yamlBranch(n.Alias, b, false); err != nil {
			return nil, err
		}
	}
	if !commented {
		b = withComments(b, n.FootComment, false)
	}
	return b, nil
}

// yamlValue is the tree value of n: a branch for a mapping, a list for a sequence (with its
// items' comments), the scalar decoded. commented says n's own comments are already in its
// parent.
func yamlValue(n *yaml.Node, commented bool) (any, error) {
	switch n.Kind {
	case yaml.SequenceNode:
		var l []any
		if !commented {
			l = listComments(l, n.HeadComment, false)
			l = listComments(l, n.LineComment, false)
		}
		for _, item := range n.Content {
			l = listComments(l, item.HeadComment, false)
			l = listComments(l, item.LineComment, true)
			v, err := yamlValue(item, true)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
			l = listComments(l, item.FootComment, false)
		}
		if !commented {
			l = listComments(l, n.FootComment, false)
		}
		return l, nil
	case yaml.MappingNode:
		return yamlBranch(n, sops.TreeBranch{}, commented)
	case yaml.ScalarNode:
		var v any
		_ = n.Decode(&v)
		return v, nil
	case yaml.AliasNode:
		return yamlValue(n.Alias, false)
	case yaml.DocumentNode:
		return nil, errors.New("a YAML document inside a document")
	}
	return nil, nil
}

// yamlNode is the YAML mapping of branch b, without its comments.
func yamlNode(b sops.TreeBranch) (*yaml.Node, error) {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, item := range b {
		if _, ok := item.Key.(sops.Comment); ok {
			continue
		}
		k := &yaml.Node{}
		if err := k.Encode(item.Key); err != nil {
			return nil, err
		}
		v, err := yamlValueNode(item.Value)
		if err != nil {
			return nil, err
		}
		m.Content = append(m.Content, k, v)
	}
	return m, nil
}

// yamlValueNode is the YAML node of tree value v, without its comments.
func yamlValueNode(v any) (*yaml.Node, error) {
	switch v := v.(type) {
	case sops.TreeBranch:
		return yamlNode(v)
	case []any:
		s := &yaml.Node{Kind: yaml.SequenceNode}
		for _, item := range v {
			if _, ok := item.(sops.Comment); ok {
				continue
			}
			n, err := yamlValueNode(item)
			if err != nil {
				return nil, err
			}
			s.Content = append(s.Content, n)
		}
		return s, nil
	}
	n := &yaml.Node{}
	return n, n.Encode(v)
}

// jsonBranches reads data, a JSON object, into one branch. What follows the object is not read,
// as SOPS does not.
func jsonBranches(data []byte) (sops.TreeBranches, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	// Numbers as SOPS reads them: an int when the number is one within int64, a float64 else.
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, errors.New("a JSON document that is not an object is not a SOPS document")
	}
	b, err := jsonBranch(dec)
	if err != nil {
		return nil, err
	}
	return sops.TreeBranches{b}, nil
}

// errObjectEnd ends the items of a JSON object.
var errObjectEnd = errors.New("the end of the object")

// jsonBranch reads the items of an object whose '{' was read, through its '}'. As SOPS's
// reader: a document that ends where an item's value should be ends the object there (a
// top-level object's items are then those before it); ending where a key should be is an error.
func jsonBranch(dec *json.Decoder) (sops.TreeBranch, error) {
	var b sops.TreeBranch
	for {
		item, err := jsonItem(dec)
		if errors.Is(err, io.EOF) || errors.Is(err, errObjectEnd) {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		b = append(b, item)
	}
}

// jsonItem reads an object's next key and its value; errObjectEnd at its '}', io.EOF when the
// document ends before the value.
func jsonItem(dec *json.Decoder) (sops.TreeItem, error) {
	t, err := dec.Token()
	if err != nil && !errors.Is(err, io.EOF) {
		return sops.TreeItem{}, err
	}
	if d, ok := t.(json.Delim); ok && d == '}' {
		return sops.TreeItem{}, errObjectEnd
	}
	key, ok := t.(string)
	if !ok {
		return sops.TreeItem{}, fmt.Errorf("a JSON object key is a %T", t)
	}
	if t, err = dec.Token(); err != nil {
		return sops.TreeItem{}, err
	}
	v, err := jsonValue(dec, t)
	if err != nil {
		return sops.TreeItem{}, err
	}
	return sops.TreeItem{Key: key, Value: v}, nil
}

// jsonValue is the tree value that begins with token t. A list that the document ends in is
// io.EOF.
func jsonValue(dec *json.Decoder, t json.Token) (any, error) {
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			return jsonBranch(dec)
		case '[':
			var l []any
			for {
				t, err := dec.Token()
				if err != nil {
					return nil, err
				}
				if d, ok := t.(json.Delim); ok && d == ']' {
					return l, nil
				}
				v, err := jsonValue(dec, t)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
		}
		return nil, fmt.Errorf("unexpected %q in a JSON document", t)
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return int(i), nil
		}
		return t.Float64()
	}
	return t, nil
}

// writeJSON writes tree value v as JSON, without its comments.
func writeJSON(w *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case sops.TreeBranch:
		w.WriteByte('{')
		first := true
		for _, item := range v {
			if _, ok := item.Key.(sops.Comment); ok {
				continue
			}
			key, ok := item.Key.(string)
			if !ok {
				return fmt.Errorf("a JSON object key is a %T", item.Key)
			}
			if !first {
				w.WriteByte(',')
			}
			first = false
			k, _ := json.Marshal(key)
			w.Write(k)
			w.WriteByte(':')
			if err := writeJSON(w, item.Value); err != nil {
				return err
			}
		}
		w.WriteByte('}')
		return nil
	case []any:
		w.WriteByte('[')
		first := true
		for _, item := range v {
			if _, ok := item.(sops.Comment); ok {
				continue
			}
			if !first {
				w.WriteByte(',')
			}
			first = false
			if err := writeJSON(w, item); err != nil {
				return err
			}
		}
		w.WriteByte(']')
		return nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Write(out)
	return nil
}
