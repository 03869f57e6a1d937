package release

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
)

// variedReleases are releases with each field of a record empty, nil or set in turn, and text
// json escapes (HTML, invalid UTF-8, line separators).
func variedReleases() map[string]*Release {
	withChart := func(f func(*chart.Chart)) *Release {
		r := rev("ns", "varied", 2, StatusDeployed)
		f(r.Chart)
		return r
	}
	at := time.Date(2025, 2, 3, 4, 5, 6, 7, time.FixedZone("X", 5400))
	out := map[string]*Release{
		"empty":        {},
		"name only":    {Name: "a"},
		"nil info":     func() *Release { r := rev("ns", "a", 1, StatusDeployed); r.Info = nil; return r }(),
		"nil chart":    func() *Release { r := rev("ns", "a", 1, StatusDeployed); r.Chart = nil; return r }(),
		"empty config": func() *Release { r := rev("ns", "a", 1, StatusDeployed); r.Config = map[string]any{}; return r }(),
		"nil config":   func() *Release { r := rev("ns", "a", 1, StatusDeployed); r.Config = nil; return r }(),
		"no manifest":  func() *Release { r := rev("ns", "a", 1, StatusDeployed); r.Manifest = ""; return r }(),
		"no hooks":     func() *Release { r := rev("ns", "a", 1, StatusDeployed); r.Hooks = nil; return r }(),
		"empty hooks":  func() *Release { r := rev("ns", "a", 1, StatusDeployed); r.Hooks = []*Hook{}; return r }(),
		"negative":     func() *Release { r := rev("ns", "a", 1, StatusDeployed); r.Version = -3; return r }(),
		"apply method": func() *Release { r := rev("ns", "a", 1, StatusDeployed); r.ApplyMethod = ApplyMethod; return r }(),
		"labels left out": func() *Release {
			r := rev("ns", "a", 1, StatusDeployed)
			r.Labels = map[string]string{"a": "b"}
			return r
		}(),
		"escapes": func() *Release {
			r := rev("ns", "<a&b>", 1, StatusDeployed)
			r.Manifest = "<script>&\u2028\u2029\xff\x00\"\\\n"
			r.Config = map[string]any{"<k>": "v&\xfe", "n": 1.5e300, "list": []any{nil, true}}
			r.Info.Notes = "\u2028 <notes> \xc3"
			return r
		}(),
		"nil files": withChart(func(c *chart.Chart) { c.Templates, c.Files = nil, nil }),
		"empty files": withChart(func(c *chart.Chart) {
			c.Templates, c.Files = []*common.File{}, []*common.File{}
		}),
		"nil file": withChart(func(c *chart.Chart) {
			c.Templates = []*common.File{nil, {Name: "t", Data: []byte("<x>")}}
		}),
		"chart everything": withChart(func(c *chart.Chart) {
			c.Lock = &chart.Lock{Digest: "sha256:00", Generated: at}
			c.Templates = []*common.File{{Name: "templates/a.yaml", Data: []byte("a: {{ .Values.a }}\n"), ModTime: at}}
			c.Files = []*common.File{{Name: "files/b.json", Data: []byte{0, 1, 2, 0xff}}, {Name: "", Data: nil}}
			c.Values = map[string]any{"a": "<b>", "nested": map[string]any{"c": []any{1.0, "d"}}}
			c.Schema = []byte(`{"type":"object"}`)
			c.SchemaModTime = at
			c.ModTime = at.Add(time.Hour)
		}),
		"nil metadata": withChart(func(c *chart.Chart) { c.Metadata = nil }),
		"large":        large("ns", "big", 3, 64<<10, 16<<10),
	}
	rich := rev("ns", "rich", 4, StatusSuperseded)
	rich.Info.Deleted = at
	rich.Info.RollbackRevision = 2
	rich.Hooks = append(rich.Hooks, &Hook{Name: "second", LastRun: releasev1.HookExecution{StartedAt: at, Phase: releasev1.HookPhaseSucceeded}})
	out["rich"] = rich
	return out
}

// TestRecordJSONIsJSONMarshal: the record JSON assembled from its fields, with and without the
// cache's charts and manifests, is json.Marshal's byte for byte, and the remainder a split
// record moves to its parts is json.Marshal's of a remainder.
func TestRecordJSONIsJSONMarshal(t *testing.T) {
	var c jsonCache
	for name, r := range variedReleases() {
		for _, round := range []string{"first", "cached"} {
			want, err := json.Marshal(r)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			j, err := c.recordJSON(r)
			if err != nil {
				t.Fatalf("%s (%s): %v", name, round, err)
			}
			if got := j.bytes(); !bytes.Equal(got, want) {
				t.Errorf("%s (%s):\n got %s\nwant %s", name, round, got, want)
			}
			if j.size() != len(want) {
				t.Errorf("%s (%s): size %d, want %d", name, round, j.size(), len(want))
			}
			for _, withManifest := range []bool{false, true} {
				rest := remainder{}
				if r.Chart != nil {
					rest.Templates, rest.Files = r.Chart.Templates, r.Chart.Files
				}
				if withManifest {
					m := r.Manifest
					rest.Manifest = &m
				}
				want, _ := json.Marshal(rest)
				var got []byte
				_ = eachOf(j.remainder(withManifest), func(b []byte) error { got = append(got, b...); return nil })
				if !bytes.Equal(got, want) {
					t.Errorf("%s (%s): remainder (manifest %v):\n got %s\nwant %s", name, round, withManifest, got, want)
				}
			}
			if r.Chart != nil {
				stripped := *r
				ch := *r.Chart
				ch.Templates, ch.Files = nil, nil
				stripped.Chart = &ch
				if got, want := j.withoutFiles().bytes(), mustJSON(t, &stripped); !bytes.Equal(got, want) {
					t.Errorf("%s (%s): without files:\n got %s\nwant %s", name, round, got, want)
				}
			}
		}
	}
}

// TestRecordJSONFollowsChanges: a chart file or a manifest changed in place, or a new one of
// the same contents, never gets the JSON kept of another.
func TestRecordJSONFollowsChanges(t *testing.T) {
	var c jsonCache
	r := large("ns", "big", 1, 16<<10, 4<<10)
	check := func(what string) {
		t.Helper()
		j, err := c.recordJSON(r)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := j.bytes(), mustJSON(t, r); !bytes.Equal(got, want) {
			t.Errorf("%s: the record JSON is not json.Marshal's", what)
		}
	}
	check("first")
	before, _ := c.recordJSON(r)
	r.Chart.Files[0].Data[100] ^= 0xff
	check("a file's byte changed in place")
	r.Chart.Templates[1].Name = "templates/renamed.yaml"
	check("a template renamed")
	r.Chart.Files[2].ModTime = epoch
	check("a file's time set")
	r.Chart.Files = append(r.Chart.Files, &common.File{Name: "more"})
	check("a file added")
	r.Manifest = r.Manifest[:len(r.Manifest)-1] + "!"
	check("the manifest changed")
	r.Manifest = string([]byte(r.Manifest)) // the same text at another address
	check("the manifest copied")
	after, _ := c.recordJSON(r)
	if before.key() == after.key() {
		t.Error("a changed record has the key of the one before it")
	}
	r.Info.Status = StatusSuperseded
	if again, _ := c.recordJSON(r); again.key() == after.key() {
		t.Error("a record of another status has the key of the one before it")
	}
}

// FuzzRecordJSON: whatever text a release holds, its assembled JSON is json.Marshal's, and a
// release changed in a file or its manifest is never given the JSON kept of the one before.
func FuzzRecordJSON(f *testing.F) {
	f.Add("a", "<b>&\u2028", "notes", []byte{0, 0xff}, "files/x", 3)
	f.Add("", "", "", []byte(nil), "", 0)
	var c jsonCache
	f.Fuzz(func(t *testing.T, name, manifest, notes string, data []byte, file string, version int) {
		r := rev("ns", name, version, StatusDeployed)
		r.Manifest, r.Info.Notes = manifest, notes
		r.Chart.Files = []*common.File{{Name: file, Data: data}}
		r.Config = map[string]any{name: notes}
		for _, round := range []string{"first", "kept"} {
			j, err := c.recordJSON(r)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := j.bytes(), mustJSON(t, r); !bytes.Equal(got, want) {
				t.Fatalf("%s:\n got %s\nwant %s", round, got, want)
			}
		}
	})
}

// TestAppendJSONStringIsJSONMarshal: every byte alone and in text, and the runes json escapes,
// are written as json.Marshal writes them.
func TestAppendJSONStringIsJSONMarshal(t *testing.T) {
	texts := []string{"", "plain", "\u2028\u2029\ufffd", "\xed\xa0\x80", "é\xc3", "a\x7fb", "<&>\"\\"}
	for b := range 256 {
		texts = append(texts, string([]byte{byte(b)}), "x"+string([]byte{byte(b)})+"\u00e9y")
	}
	for _, s := range texts {
		if got, want := appendJSONString(nil, s), mustJSON(t, s); !bytes.Equal(got, want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
}
