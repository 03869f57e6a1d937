package resource

import (
	"testing"
)

// TestParsedParsesEachTextOnce checks that Parsed gives each caller an object of its own, parsed
// once for each document's text, and the errors of ParseDocument.
func TestParsedParsesEachTextOnce(t *testing.T) {
	manifest := "---\n# Source: a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n# Source: none.yaml\n~\n"
	var p Parsed
	first, err := p.Manifest(manifest)
	if err != nil || len(first) != 1 || p.Len() != 2 {
		t.Fatalf("Manifest = %v, %v, %d documents held; want one ConfigMap of two documents", first, err, p.Len())
	}
	first[0].SetNamespace("changed")
	again, err := p.Manifest(manifest + "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: b\n")
	if err != nil || len(again) != 2 || p.Len() != 3 {
		t.Fatalf("Manifest again = %v, %v, %d documents held; want two objects, one document parsed anew", again, err, p.Len())
	}
	if again[0].GetNamespace() != "" {
		t.Errorf("a change to one caller's object reached another's: namespace %q", again[0].GetNamespace())
	}
	if _, err := p.Manifest("---\n# Source: bad.yaml\nkind: ConfigMap\n"); err == nil {
		t.Error("a document without apiVersion parsed")
	}
	var none *Parsed
	if objs, err := none.Manifest(manifest); err != nil || len(objs) != 1 || none.Len() != 0 {
		t.Errorf("a nil Parsed: %v, %v, %d held", objs, err, none.Len())
	}
}
