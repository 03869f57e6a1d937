package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/version"
)

func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return out.String(), errOut.String(), err
}

func TestVersion(t *testing.T) {
	stdout, _, err := run(t, "version")
	if err != nil {
		t.Fatalf("berth version: %v", err)
	}
	want := version.Get().String() + "\n"
	if stdout != want {
		t.Errorf("berth version printed %q, want %q", stdout, want)
	}
	if !strings.HasPrefix(stdout, "berth "+version.Version+" (go") {
		t.Errorf("berth version printed %q, want it to start with %q", stdout, "berth "+version.Version+" (go")
	}
}

func TestVersionJSON(t *testing.T) {
	stdout, _, err := run(t, "version", "-o", "json")
	if err != nil {
		t.Fatalf("berth version -o json: %v", err)
	}
	var got version.Info
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("berth version -o json printed %q: %v", stdout, err)
	}
	if got != version.Get() {
		t.Errorf("berth version -o json = %+v, want %+v", got, version.Get())
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"version", "--no-such-flag"}, "--no-such-flag"},
		{"flag without value", []string{"version", "--output"}, "--output"},
		{"bad output format", []string{"version", "-o", "yaml"}, `"yaml"`},
		{"unknown command", []string{"no-such-command"}, "no-such-command"},
		{"extra argument", []string{"version", "extra"}, "extra"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, err := run(t, tt.args...)
			if err == nil {
				t.Fatalf("berth %s: got no error", strings.Join(tt.args, " "))
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not name %q", err, tt.want)
			}
			if !strings.Contains(stderr, err.Error()) {
				t.Errorf("stderr %q does not show error %q", stderr, err)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	stdout, _, err := run(t, "--help")
	if err != nil {
		t.Fatalf("berth --help: %v", err)
	}
	for _, want := range []string{"berth", "Helm", "version"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("berth --help does not mention %q:\n%s", want, stdout)
		}
	}
}
