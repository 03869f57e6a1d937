package dashboard

import (
	"strings"
	"testing"
)

// FuzzParseAction: whatever a page sends, an action is refused with an InputError or is one of
// those asked for, naming a release and a revision not below 0.
func FuzzParseAction(f *testing.F) {
	f.Add([]byte(`{"action":"rollback","namespace":"team-a","name":"web","revision":3}`))
	f.Add([]byte(`{"action":"uninstall","namespace":"x","name":"y"}`))
	f.Add([]byte(`{"action":"retry","namespace":"","name":"y","revision":-1}`))
	f.Add([]byte(`[1,2,3]`))
	f.Add([]byte(strings.Repeat("{", 1000)))
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := parseAction(body, "rollback", "uninstall")
		if err != nil {
			if _, ok := err.(*InputError); !ok {
				t.Fatalf("error %T %v: want an InputError", err, err)
			}
			return
		}
		if (a.Action != "rollback" && a.Action != "uninstall") || a.Namespace == "" || a.Name == "" || a.Revision < 0 {
			t.Fatalf("accepted %+v", a)
		}
	})
}

// FuzzPaging: an offset and a limit are refused or within their bounds.
func FuzzPaging(f *testing.F) {
	f.Add("0", "50")
	f.Add("-1", "")
	f.Add("9999999999999999999999", "1")
	f.Add("", "501")
	f.Fuzz(func(t *testing.T, offset, limit string) {
		o, l, err := paging(offset, limit)
		if err != nil {
			return
		}
		if o < 0 || l < 1 || l > MaxPageSize {
			t.Fatalf("paging(%q, %q) = %d, %d", offset, limit, o, l)
		}
	})
}
