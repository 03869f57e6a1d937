package inputs

import (
	"errors"
	"strings"
	"testing"

	"github.com/berthdev/berth/api/v1alpha1"
)

func TestTargetPathLimits(t *testing.T) {
	tests := []struct {
		name, path string
		want       string
	}{
		{"too long", "a." + strings.Repeat("b", MaxTargetPathLength), "the path is 252 bytes, more than the 250 allowed"},
		{"an index too large", "a[65537]", "the list index [65537] is more than the 65536 allowed"},
		{"an index too large for an int", "a[99999999999999999999999]", "the list index [99999999999999999999999] is more than the 65536 allowed"},
		{"two large indexes", "a[65536][1]", "the number of list items its indexes add is 65539, more than the 65537 allowed"},
		{"forty large indexes", "a" + strings.Repeat("[65536]", 40), "the path is 281 bytes, more than the 250 allowed"},
		{"thirty large indexes", "a" + strings.Repeat("[65536]", 30), "the number of list items its indexes add is 131074, more than the 65537 allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := ValuesSource{Ref: v1alpha1.ValuesReference{Kind: "Secret", Name: "s", Key: "k", TargetPath: tt.path}, Data: []byte("v")}
			_, err := MergeValues("team-a", []ValuesSource{src}, nil)
			var limit *LimitError
			if !errors.As(err, &limit) {
				t.Fatalf("got %v, want a LimitError", err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "Secret/team-a/s key k") {
				t.Errorf("error %q does not name the key and say %q", err, tt.want)
			}
		})
	}
	// Within the limits: one index of the largest, and many small ones.
	for _, path := range []string{"a[65536]", "a" + strings.Repeat("[1]", 60)} {
		src := ValuesSource{Ref: v1alpha1.ValuesReference{Kind: "Secret", Name: "s", Key: "k", TargetPath: path}, Data: []byte("v")}
		if _, err := MergeValues("team-a", []ValuesSource{src}, nil); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}

func TestValuesDocumentLimits(t *testing.T) {
	big := func(name string, n int) ValuesSource {
		return ValuesSource{Ref: v1alpha1.ValuesReference{Kind: "ConfigMap", Name: name, Key: "values.yaml"},
			Data: []byte("a: '" + strings.Repeat("x", n-6) + "'\n")}
	}
	_, err := MergeValues("team-a", []ValuesSource{big("huge", MaxValuesDocumentBytes+1)}, nil)
	var limit *LimitError
	if !errors.As(err, &limit) || limit.Limit != MaxValuesDocumentBytes {
		t.Fatalf("got %v, want the document's limit", err)
	}
	if !strings.Contains(err.Error(), "ConfigMap/team-a/huge key values.yaml: the content is 1048577 bytes, more than the 1048576 allowed") {
		t.Errorf("error %q", err)
	}
	var five []ValuesSource
	for range 5 {
		five = append(five, big("one", MaxValuesDocumentBytes))
	}
	_, err = MergeValues("team-a", five, nil)
	if !errors.As(err, &limit) || limit.Limit != MaxValuesBytes {
		t.Fatalf("got %v, want the total's limit", err)
	}
	if _, err := MergeValues("team-a", five[:4], nil); err != nil {
		t.Errorf("four documents of the largest: %v", err)
	}
}

// listItems counts the list slots under v.
func listItems(v any) int {
	switch v := v.(type) {
	case map[string]any:
		n := 0
		for _, x := range v {
			n += listItems(x)
		}
		return n
	case []any:
		n := len(v)
		for _, x := range v {
			n += listItems(x)
		}
		return n
	}
	return 0
}

func FuzzTargetPath(f *testing.F) {
	for _, seed := range []string{
		"a", "a.b.c", `a\.b`, "list[0]", "list[4].name", "grid[0][1]", "a[65536]", "a[65537]", "a[65536][65536]",
		"a..b", "[0]", "a.", "a[0]b", "a[0", "a[x]", "a[-1]", `a\`, "a[99999999999999999999]", "a" + strings.Repeat("[65536]", 40),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, path string) {
		values := map[string]any{"list": []any{"x", "y"}}
		err := setPath(values, path, "v")
		if len(path) > MaxTargetPathLength && err == nil {
			t.Fatalf("a path of %d bytes was taken", len(path))
		}
		if err != nil {
			return
		}
		// A path adds at most MaxPathItems items to what was there (the two of "list").
		if n := listItems(values); n > MaxPathItems+2 {
			t.Fatalf("%q made %d list items, more than %d", path, n, MaxPathItems+2)
		}
	})
}

func FuzzValuesDocument(f *testing.F) {
	for _, seed := range []struct {
		doc, path string
	}{
		{"a: 1\nb: {c: [1, 2]}\n", ""},
		{"", ""},
		{"- 1\n", ""},
		{"a: &x [1, 2]\nb: *x\n", ""},
		{"a: !!int x\n", ""},
		{"? [a]\n: 1\n", ""},
		{"secret,value", "db.password"},
		{"v", "list[3].name"},
		{"a: {b: {c: {d: {e: 1}}}}\n", ""},
	} {
		f.Add([]byte(seed.doc), seed.path)
	}
	f.Fuzz(func(t *testing.T, doc []byte, path string) {
		src := ValuesSource{Ref: v1alpha1.ValuesReference{Kind: "Secret", Name: "s", Key: "k", TargetPath: path}, Data: doc}
		base := ValuesSource{Ref: v1alpha1.ValuesReference{Kind: "ConfigMap", Name: "b", Key: "values.yaml"}, Data: []byte("list: [a, b]\nm: {k: v}\n")}
		vals, err := MergeValues("team-a", []ValuesSource{base, src}, map[string]any{"spec": "x"})
		if err != nil {
			var ve *ValuesError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v is not a ValuesError", err)
			}
			return
		}
		if _, err := DigestOf(vals); err != nil {
			t.Fatalf("values merged from %q cannot be digested: %v", doc, err)
		}
	})
}
