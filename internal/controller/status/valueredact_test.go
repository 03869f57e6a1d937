package status

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/berthdev/berth/api/v1alpha1"
)

func TestValueRedactorText(t *testing.T) {
	const pem = "-----BEGIN KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQEFAASC\nAT8wggE7AgEAAkEAq7BFUpkGp3+XQmmu\n-----END KEY-----"
	values := map[string]any{
		"password": "*Hunter2-s3cr3t",
		"db":       map[string]any{"quoted": `pa"ss\word`, "url": "postgres://u:Sw0rdfish@db"},
		"key":      pem,
		"list":     []any{"abcdef12", "ef12ghij"},
		"short":    "abc",
		"flag":     "true",
		"port":     5432,
		"enabled":  true,
		"name":     "web",
		"fullname": "team-a-web",
	}
	r := NewValueRedactor(values, "team-a-web")
	for _, tt := range []struct {
		name, msg, want string
	}{
		{"in a YAML error",
			`templates/secret.yaml: error converting YAML to JSON: yaml: line 4: did not find expected alphabetic or numeric character near "data: {key: *Hunter2-s3cr3t}"`,
			`templates/secret.yaml: error converting YAML to JSON: yaml: line 4: did not find expected alphabetic or numeric character near "data: {key: [redacted]}"`},
		{"Go-quoted", `value "pa\"ss\\word" is not allowed`, `value "[redacted]" is not allowed`},
		{"as it is", `value pa"ss\word is not allowed`, `value [redacted] is not allowed`},
		{"JSON-escaped", `{"password":"pa\"ss\\word"}`, `{"password":"[redacted]"}`},
		{"YAML single-quoted", `near 'postgres://u:Sw0rdfish@db'`, `near '[redacted]'`},
		{"one line of a multi-line value", "line 2: MIIBVQIBADANBgkqhkiG9w0BAQEFAASC: bad", "line 2: [redacted]: bad"},
		{"multi-line value JSON-escaped", `"-----BEGIN KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQEFAASC\n`, `"[redacted]\n[redacted]\n`},
		{"short values, numbers, booleans and kept names left", "abc true 5432 web team-a-web", "abc true 5432 web team-a-web"},
		{"overlapping values, one mark", "id abcdef12ghij here", "id [redacted] here"},
		{"touching values, one mark", "*Hunter2-s3cr3tabcdef12", "[redacted]"},
		{"every occurrence", "*Hunter2-s3cr3t and *Hunter2-s3cr3t", "[redacted] and [redacted]"},
		{"a cut message ending in a value's start", "near *Hunter2-s3" + cutMark, "near [redacted]" + cutMark},
		{"a cut message ending in a short start", "near *Hu" + cutMark, "near *Hu" + cutMark},
		{"nothing to redact", "the chart failed", "the chart failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Text(tt.msg); got != tt.want {
				t.Errorf("Text(%q)\n got %q\nwant %q", tt.msg, got, tt.want)
			}
		})
	}
}

func TestValueRedactorNilRedactsNothing(t *testing.T) {
	var r *ValueRedactor
	if got := r.Text("*Hunter2-s3cr3t"); got != "*Hunter2-s3cr3t" {
		t.Errorf("got %q", got)
	}
	if got := NewValueRedactor(nil).Text("*Hunter2-s3cr3t"); got != "*Hunter2-s3cr3t" {
		t.Errorf("got %q", got)
	}
}

// TestValueRedactorBounds checks the caps: how many forms are looked for, how long a form and a
// message are.
func TestValueRedactorBounds(t *testing.T) {
	many := map[string]any{}
	for i := range 2 * maxRedactedForms {
		many[fmt.Sprintf("k%05d", i)] = fmt.Sprintf("value-%05d", i)
	}
	r := NewValueRedactor(many)
	if len(r.forms) != maxRedactedForms {
		t.Errorf("%d forms looked for, want the cap %d", len(r.forms), maxRedactedForms)
	}
	// The first values in key order are looked for; those past the cap are not.
	if got := r.Text("value-00000 value-01999"); got != "[redacted] value-01999" {
		t.Errorf("got %q", got)
	}

	var b strings.Builder
	for i := 0; b.Len() < 3*maxRedactedForm; i++ {
		fmt.Fprintf(&b, "%05d,", i)
	}
	long := b.String()
	r = NewValueRedactor(map[string]any{"long": long, "secret": "*Hunter2-s3cr3t"})
	if got := r.Text("a " + long + " b"); got != "a [redacted]"+long[maxRedactedForm:]+" b" {
		t.Errorf("a long value is looked for by its first %d bytes: got %.40q...", maxRedactedForm, got)
	}

	// A value across the cut of a long message is redacted whole, and the message cut.
	msg := strings.Repeat("x", maxRedactedMessage-5) + "*Hunter2-s3cr3t" + strings.Repeat("y", 100)
	got := r.Text(msg)
	if strings.Contains(got, "*Hunt") || !strings.HasSuffix(got, "[redacted]"+cutMark) || len(got) > maxRedactedMessage+len(redactedMark)+len(cutMark) {
		t.Errorf("got ...%q (%d bytes)", got[max(0, len(got)-40):], len(got))
	}
}

func TestRedactStatusTakesValuesOut(t *testing.T) {
	r := NewValueRedactor(map[string]any{"password": "*Hunter2-s3cr3t"})
	rel := &v1alpha1.Release{}
	rel.Status.Conditions = []metav1.Condition{{Type: "Ready", Message: "near *Hunter2-s3cr3t"}}
	rel.Status.History = []v1alpha1.OperationRecord{{Operation: "install", Message: "near *Hunter2-s3cr3t"}}
	rel.Status.Blockers = []v1alpha1.Blocker{{Kind: "permission", Object: "Secret/a/*Hunter2-s3cr3t", Message: "*Hunter2-s3cr3t", Next: "x"}}
	Redact(rel, false, r)
	for _, text := range []string{rel.Status.Conditions[0].Message, rel.Status.History[0].Message, rel.Status.Blockers[0].Object, rel.Status.Blockers[0].Message} {
		if strings.Contains(text, "Hunter2") {
			t.Errorf("the status holds the value: %q", text)
		}
	}
}

func TestRedactingLogsAndErrors(t *testing.T) {
	r := NewValueRedactor(map[string]any{"password": "*Hunter2-s3cr3t"})
	var lines []string
	base := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{})
	ctx := Redacting(log.IntoContext(context.Background(), base), r)
	l := log.FromContext(ctx).WithValues("value", "*Hunter2-s3cr3t")
	l.Info("rendered *Hunter2-s3cr3t", "message", "near *Hunter2-s3cr3t")
	l.Error(errors.New(`yaml: near "*Hunter2-s3cr3t"`), "apply", "cause", errors.New("*Hunter2-s3cr3t"))
	if len(lines) != 2 {
		t.Fatalf("logged %d lines, want 2", len(lines))
	}
	for _, line := range lines {
		if strings.Contains(line, "Hunter2") || !strings.Contains(line, redactedMark) {
			t.Errorf("logged %s", line)
		}
	}

	err := fmt.Errorf("upgrade: %w", reconcile.TerminalError(errors.New("near *Hunter2-s3cr3t")))
	got := r.RedactError(err)
	if strings.Contains(got.Error(), "Hunter2") || !errors.Is(got, reconcile.TerminalError(nil)) {
		t.Errorf("RedactError = %q; still terminal: %v", got, errors.Is(got, reconcile.TerminalError(nil)))
	}
	if RedactorOf(ctx) != r || RedactorOf(context.Background()) != nil {
		t.Error("RedactorOf does not give the context's redactor")
	}
	var _ logr.CallDepthLogSink = redactSink{}
}

// BenchmarkValueRedactor is the cost of one message of the longest looked through, with as many
// forms as are looked for.
func BenchmarkValueRedactor(b *testing.B) {
	values := map[string]any{}
	for i := range maxRedactedForms {
		values[fmt.Sprintf("k%05d", i)] = fmt.Sprintf("secret-value-%05d", i)
	}
	r := NewValueRedactor(values)
	msg := strings.Repeat("s", maxRedactedMessage)
	b.ReportAllocs()
	for b.Loop() {
		r.Text(msg)
	}
}

// FuzzValueRedactor redacts a message (the tenant's rendered text, in its error) with values the
// tenant chose: a value of the bytes looked for is never left whole in the result, which is no
// longer than the message allows, and one call allocates a bounded amount, whatever the values
// and the message.
func FuzzValueRedactor(f *testing.F) {
	f.Add("password", "near *Hunter2-s3cr3t here", "*Hunter2-s3cr3t", "line\nMIIBVQIBADANBgkq")
	f.Add("a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"+cutMark, "aaaa", "aaaaa")
	f.Add("k", `{"v":"pa\"ss\\word"}`, `pa"ss\word`, "red]acted")
	f.Fuzz(func(t *testing.T, key, msg, v1, v2 string) {
		// Half of the messages repeated up to twice the longest looked through, as an error can
		// quote a long rendered text.
		if n := len(msg); n > 0 && len(key)%2 == 1 {
			msg = strings.Repeat(msg, max(1, 2*maxRedactedMessage/n))
		}
		r := NewValueRedactor(map[string]any{key: v1, key + "2": []any{v2, map[string]any{"x": v1 + v2}}})
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got := r.Text(msg)
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Errorf("Redacting %d bytes allocated %d KiB", len(msg), n>>10)
		}
		if len(got) > maxRedactedMessage+len(cutMark)+len(redactedMark)*(maxRedactedMessage/minRedactedValue+1) {
			t.Errorf("redacted %d bytes into %d", len(msg), len(got))
		}
		for _, v := range []string{v1, v2} {
			// A value that holds the mark's characters can be made again by the mark and its
			// neighbours: only values without them are checked.
			if len(v) >= minRedactedValue && len(v) <= maxRedactedForm && !isKeyword(v) && !strings.ContainsAny(v, "[]redacted") &&
				len(msg) <= maxRedactedMessage && strings.Contains(got, v) {
				t.Errorf("Text(%.80q) = %.200q holds %q", msg, got, v)
			}
		}
	})
}

func TestSecretFirstRedactor(t *testing.T) {
	values := map[string]any{"z": map[string]any{"password": "Hunter2-encrypted"}}
	for i := range 1000 {
		values[fmt.Sprintf("a%04d", i)] = fmt.Sprintf("plain-value-%04d", i)
	}
	msg := "template failed at Hunter2-encrypted"
	if got := NewValueRedactor(values).Text(msg); got != msg {
		t.Fatalf("the plain redactor found the value past its bound (%q): the test no longer shows what it should", got)
	}
	got := NewSecretFirstRedactor(values, [][]string{{"z", "password"}, {"no", "such"}}).Text(msg)
	if strings.Contains(got, "Hunter2") {
		t.Fatalf("Text = %q, want the encrypted value taken out", got)
	}
}
