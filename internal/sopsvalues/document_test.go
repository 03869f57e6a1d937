package sopsvalues

import (
	"testing"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/config"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	"github.com/google/go-cmp/cmp"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/yamlbound"
)

// documents are YAML and JSON documents whose trees the two readers must make alike: comments
// of every place, aliases, several documents, nested sequences and mappings, every scalar type.
var documents = []struct {
	name string
	data string
	f    Format
}{
	{"flat", "a: 1\nb: two\nc: 3.5\nd: true\ne: null\n", YAML},
	{"comments", `# head of the document

# head of a
a: 1 # line of a
# foot of a

# head of b
b:
  # head of c
  c: x # line of c
  d: [1, 2] # line of d
  # foot of the mapping
list: # line of list
  # head of the first item
  - one # line of the first item
  - two
  # foot of the list
  - - nested # line of nested
    - # head of a mapping item
      k: v # line of k
# foot of the document
`, YAML},
	{"aliases", "base: &b\n  x: 1 # line\n  y: [a, b]\nother: *b\nscalar: &s text\nagain: *s\nmerged:\n  <<: *b\n  z: 2\n", YAML},
	{"documents", "a: 1\n---\n# second\nb: 2\n---\n", YAML},
	{"keys", "1: int key\ntrue: bool key\n2.5: float key\n? [a, b]\n: complex key\n", YAML},
	{"tags", "s: !!str 12\nb: !!binary aGVsbG8=\nt: 2024-01-02T03:04:05Z\nbig: 123456789012345678901234567890\nquoted: '# not a comment'\n", YAML},
	{"empty", "", YAML},
	{"only a comment", "# nothing else\n", YAML},
	{"empty document marker", "---\n", YAML},
	{"sequence", "- a\n- b\n", YAML},
	{"scalar document", "just text\n", YAML},
	{"repeated key", "a: 1\na: 2\n", YAML},
	{"json", `{"a": 1, "b": {"c": [1, 2.5, "x", true, null, {"d": []}, []]}, "e": {}, "big": 123456789012345678901234567890, "neg": -7, "exp": 1e3}`, JSON},
	{"json trailing", `{"a": 1} {"b": 2}`, JSON},
	{"json array", `[1, 2]`, JSON},
	{"json scalar", `"text"`, JSON},
	{"json broken", `{"a": 1,`, JSON},
	{"json empty", ``, JSON},
	{"json non-string key", `{1: 2}`, JSON},
	// SOPS's reader ends a top-level object where the document ends in an item's value.
	{"json ends after a key", `{"a": 1, "b"`, JSON},
	{"json ends in a list", `{"a": 1, "b": [1, 2`, JSON},
	{"json ends in a nested object", `{"a": {"b": 1`, JSON},
}

// sopsBranches is what SOPS's own store of format f reads data into.
func sopsBranches(data []byte, f Format) (b sops.TreeBranches, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, errPanicked
		}
	}()
	if f == JSON {
		return sopsjson.NewStore(&config.JSONStoreConfig{}).LoadPlainFile(data)
	}
	return sopsyaml.NewStore(&config.YAMLStoreConfig{}).LoadPlainFile(data)
}

type panicked struct{}

func (panicked) Error() string { return "SOPS's store panicked" }

var errPanicked error = panicked{}

// sameAsSOPS fails t when berth's reader and SOPS's make different trees of data, or when one
// refuses data and the other does not.
func sameAsSOPS(t *testing.T, data []byte, f Format) {
	t.Helper()
	want, werr := sopsBranches(data, f)
	read := yamlBranches
	if f == JSON {
		read = jsonBranches
	}
	got, err := read(data)
	if (err != nil) != (werr != nil) {
		t.Fatalf("%s %q: berth's reader says %v, SOPS's %v", f, data, err, werr)
	}
	if err != nil {
		return
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("%s %q: the trees differ (-SOPS +berth):\n%s", f, data, d)
	}
}

// TestDocumentsAsSOPSReadsThem: berth's reader makes of each document the tree SOPS's stores
// make, comments included, which the document's MAC covers; and refuses what they refuse.
func TestDocumentsAsSOPSReadsThem(t *testing.T) {
	for _, d := range documents {
		t.Run(d.name, func(t *testing.T) { sameAsSOPS(t, []byte(d.data), d.f) })
	}
}

// TestEmitDocument: a tree written as a plain document holds the values SOPS's stores write of
// it, as a values file reads them, in YAML and in JSON.
func TestEmitDocument(t *testing.T) {
	for _, d := range documents {
		if d.name != "comments" && d.name != "json" && d.name != "aliases" && d.name != "tags" {
			continue
		}
		branches, err := sopsBranches([]byte(d.data), d.f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := emitDocument(branches, d.f)
		if err != nil {
			t.Fatalf("%s: %v", d.name, err)
		}
		var want []byte
		if d.f == JSON {
			want, err = sopsjson.NewStore(&config.JSONStoreConfig{}).EmitPlainFile(branches)
		} else {
			want, err = sopsyaml.NewStore(&config.YAMLStoreConfig{}).EmitPlainFile(branches)
		}
		if err != nil {
			t.Fatal(err)
		}
		if d.f == JSON && string(got) != string(want) {
			t.Errorf("%s: the plain JSON document is\n%s\nwhere SOPS writes\n%s", d.name, got, want)
		}
		var g, w any
		if err := sigsyaml.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: the plain document does not read as values: %v\n%s", d.name, err, got)
		}
		if err := sigsyaml.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("%s: the plain document holds other values than SOPS writes (-SOPS +berth):\n%s\n%s", d.name, diff, got)
		}
	}
}

// FuzzDocumentsAsSOPSReadsThem holds berth's reader to SOPS's stores on any document, within
// the bounds Detect reads a document in (its aliases expanded no further than yamlbound.Local).
func FuzzDocumentsAsSOPSReadsThem(f *testing.F) {
	for _, d := range documents {
		f.Add([]byte(d.data), d.f == JSON)
	}
	f.Fuzz(func(t *testing.T, data []byte, isJSON bool) {
		if len(data) > 64<<10 || yamlbound.Check(data, yamlbound.Limits{Nodes: 10_000, Bytes: 100_000}) != nil {
			return
		}
		format := YAML
		if isJSON {
			format = JSON
		}
		sameAsSOPS(t, data, format)
	})
}
