package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/internal/apidocs"
)

// TestAPIReferenceIsCurrent regenerates the Release API reference from the Go types in
// api/v1alpha1 and compares it with api.md: a type or doc comment changed without `make docs`
// fails here.
func TestAPIReferenceIsCurrent(t *testing.T) {
	want, err := apidocs.Generate(apidocs.Berth("../api/v1alpha1"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("api.md")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(got), string(want)); diff != "" {
		t.Errorf("docs/api.md is stale: run make docs (-committed +generated):\n%s", diff)
	}
}

// TestLinksResolve checks every relative link of the README and of the pages in docs/: its file
// exists, and its heading (#anchor) is one of that page's, as GitHub names them.
func TestLinksResolve(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	guides, err := filepath.Glob("guides/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(append(pages, guides...), "../README.md")
	for _, page := range pages {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range links(string(text)) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %q: %v", page, target, err)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(path, ".md") {
				t.Errorf("%s: link %q: an anchor in a file that is not Markdown", page, target)
				continue
			}
			linked, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(string(linked))[anchor] {
				t.Errorf("%s: link %q: %s has no heading #%s", page, target, path, anchor)
			}
		}
	}
}

var (
	linkRE   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineRE = regexp.MustCompile("`[^`]*`")
	punctRE  = regexp.MustCompile(`[^\p{L}\p{N}\s_-]`)
)

// links returns the targets of the Markdown links of text, outside code.
func links(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(inlineRE.ReplaceAllStringFunc(line, blankCode), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// blankCode hides inline code that holds no link, so that what looks like a link in it is not
// taken for one.
func blankCode(code string) string {
	if strings.Contains(code, "](") {
		return strings.Repeat(" ", len(code))
	}
	return code
}

// anchors returns the anchors GitHub gives the headings of text: lower case, punctuation but
// hyphens and underscores removed, spaces made hyphens, a repeated one suffixed -1, -2, ...
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		a := strings.ReplaceAll(punctRE.ReplaceAllString(strings.ToLower(heading), ""), " ", "-")
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}
