package cli

import (
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/testenv"
)

func TestCompletionScripts(t *testing.T) {
	for _, tt := range []struct {
		shell string
		want  []string
	}{
		{"bash", []string{"# bash completion V2 for berth", "__start_berth", "complete -o default -F __start_berth berth"}},
		{"zsh", []string{"#compdef berth", "_berth()", "compdef _berth berth\n"}},
		{"fish", []string{"# fish completion for berth", "complete -c berth"}},
		{"powershell", []string{"# powershell completion for berth", "Register-ArgumentCompleter"}},
	} {
		for _, args := range [][]string{{"completion", tt.shell}, {"completion", tt.shell, "--no-descriptions"}} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				stdout, _, err := run(t, args...)
				if err != nil {
					t.Fatalf("berth %s: %v", strings.Join(args, " "), err)
				}
				for _, w := range tt.want {
					if !strings.Contains(stdout, w) {
						t.Errorf("berth %s does not print %q", strings.Join(args, " "), w)
					}
				}
			})
		}
	}
	if _, _, err := run(t, "completion", "tcsh"); err == nil {
		t.Error("berth completion tcsh: no error")
	}
}

// completions runs cobra's hidden __complete command: the candidates it prints, one a line,
// before the directive line.
func completions(t *testing.T, args ...string) (candidates []string, directive string) {
	t.Helper()
	stdout, _, err := run(t, append([]string{"__complete"}, args...)...)
	if err != nil {
		t.Fatalf("berth __complete %s: %v", strings.Join(args, " "), err)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

func TestCompleteReleaseNames(t *testing.T) {
	env := testenv.New(t)
	token := env.Namespace[len(env.Namespace)-5:]
	seedReleases(t, env, token)
	web, db, gone := "web-"+token, "db-"+token, "gone-"+token
	kube := []string{"--kubeconfig", env.Kubeconfig, "-n", env.Namespace}
	releases := []string{
		db + "\tdemo-1.2.3 -> failed", gone + "\tdemo-1.2.3 -> uninstalled", web + "\tdemo-1.2.3 -> deployed",
	}
	revisions := []string{"1\tApp: 4.5.6, Chart: demo-1.2.3", "2\tApp: 4.5.6, Chart: demo-1.2.3"}

	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"status"}, releases},
		{[]string{"history"}, releases},
		{[]string{"test"}, releases},
		{[]string{"upgrade"}, releases},
		{[]string{"rollback"}, releases},
		{[]string{"uninstall"}, releases},
		{[]string{"get", "all"}, releases},
		{[]string{"get", "manifest"}, releases},
		{[]string{"get", "values"}, releases},
		{[]string{"get", "notes"}, releases},
		{[]string{"get", "hooks"}, releases},
		{[]string{"get", "metadata"}, releases},
		{[]string{"uninstall", db, gone}, releases[2:]},
		{[]string{"status", web}, nil},
		{[]string{"rollback", web}, revisions},
		{[]string{"status", web, "--revision"}, revisions},
		{[]string{"get", "values", web, "--revision"}, revisions},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			args := append(append(tt.args[:len(tt.args):len(tt.args)], kube...), "")
			if tt.args[len(tt.args)-1] == "--revision" {
				// --revision must come last, right before the word completed.
				args = append(append(append([]string{}, tt.args[:len(tt.args)-1]...), kube...), "--revision", "")
			}
			got, directive := completions(t, args...)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("completions %q, want %q", got, tt.want)
			}
			if directive != ":4" {
				t.Errorf("directive %s, want :4 (no file completion)", directive)
			}
		})
	}

	t.Run("a chart path after the release", func(t *testing.T) {
		got, directive := completions(t, append(append([]string{"upgrade", web}, kube...), "")...)
		if len(got) != 0 || directive != ":0" {
			t.Errorf("completions %q, directive %s; want none and :0 (files)", got, directive)
		}
	})
	t.Run("no cluster", func(t *testing.T) {
		got, directive := completions(t, "status", "--kubeconfig", t.TempDir()+"/missing", "")
		if len(got) != 0 || directive != ":4" {
			t.Errorf("completions %q, directive %s; want none and :4", got, directive)
		}
	})
}
