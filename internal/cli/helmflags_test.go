package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/lifecycle"
)

// TestCRDPolicyOfSkipCRDs: --skip-crds is --crds skip; with another --crds it is refused.
func TestCRDPolicyOfSkipCRDs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		crds    lifecycle.CRDPolicy
		set     bool
		skip    bool
		want    lifecycle.CRDPolicy
		wantErr string
	}{
		{crds: lifecycle.CRDsDefault, want: lifecycle.CRDsDefault},
		{crds: lifecycle.CRDsCreate, set: true, want: lifecycle.CRDsCreate},
		{crds: lifecycle.CRDsDefault, skip: true, want: lifecycle.CRDsSkip},
		{crds: lifecycle.CRDsSkip, set: true, skip: true, want: lifecycle.CRDsSkip},
		{crds: lifecycle.CRDsCreate, set: true, skip: true, wantErr: "--skip-crds and --crds create contradict each other"},
		{crds: lifecycle.CRDsCreateReplace, set: true, skip: true, wantErr: "--skip-crds and --crds create-replace contradict each other"},
	}
	for _, tt := range tests {
		got, err := crdPolicy(tt.crds, tt.set, tt.skip)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("crdPolicy(%q, set %v, skip %v): %v, want an error containing %q", tt.crds, tt.set, tt.skip, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("crdPolicy(%q, set %v, skip %v) = %q, %v; want %q", tt.crds, tt.set, tt.skip, got, err, tt.want)
		}
	}
}

// TestTemplateDryRun reads helm template's --dry-run and --validate as Helm v4 does.
func TestTemplateDryRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value    string
		validate bool
		server   bool
		wantErr  string
	}{
		{value: "client"},
		{value: "unset"}, // --dry-run alone
		{value: "true"},
		{value: "server", server: true},
		{value: "client", validate: true, server: true},
		{value: "none", wantErr: `invalid dry-run value ("none"). Must be "server" or "client"`},
		{value: "false", wantErr: `invalid dry-run value ("false"). Must be "server" or "client"`},
		{value: "cluster", wantErr: `invalid dry-run value ("cluster"). Must be "none", "server", or "client"`},
	}
	for _, tt := range tests {
		server, err := templateDryRun(tt.value, tt.validate)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("--dry-run=%s: %v, want %s", tt.value, err, tt.wantErr)
			}
			continue
		}
		if err != nil || server != tt.server {
			t.Errorf("--dry-run=%s --validate=%v: server %v, %v; want %v", tt.value, tt.validate, server, err, tt.server)
		}
	}
}

// TestInstallNameAndChart reads install's arguments as helm install does.
func TestInstallNameAndChart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args         []string
		generate     bool
		nameTemplate string
		name         string // a regular expression
		wantErr      string
	}{
		{args: []string{"web", "./charts/web"}, name: "^web$"},
		{args: []string{"./charts/web-app.tgz"}, generate: true, name: `^web-app-\d+$`},
		{args: []string{"."}, generate: true, name: `^chart-\d+$`},
		{args: []string{"./web"}, nameTemplate: `{{ "shop" | upper | lower }}-x`, name: "^shop-x$"},
		{args: []string{"./web"}, wantErr: "must either provide a name or specify --generate-name"},
		{args: []string{"web", "./web"}, generate: true, wantErr: "cannot set --generate-name and also specify a name"},
		{args: []string{"web", "./web"}, nameTemplate: "x", wantErr: "cannot set --name-template and also specify a name"},
		{args: []string{"web", "./web", "extra"}, wantErr: "expected at most two arguments, unexpected arguments: extra"},
	}
	for _, tt := range tests {
		name, ref, err := installNameAndChart(tt.args, tt.generate, tt.nameTemplate)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("install %v: %v, want %s", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !regexp.MustCompile(tt.name).MatchString(name) || ref != tt.args[len(tt.args)-1] {
			t.Errorf("install %v: name %q, chart %q, %v; want a name matching %s", tt.args, name, ref, err, tt.name)
		}
	}
}

// TestHelmFlagsBadInput: contradictions and what Helm refuses stop the command before it reads a
// chart or contacts a cluster.
func TestHelmFlagsBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"install", "web", "./no-such-chart", "--hide-secret"}, "hiding Kubernetes secrets requires a dry-run mode"},
		{[]string{"upgrade", "web", "./no-such-chart", "--hide-secret"}, "hiding Kubernetes secrets requires a dry-run mode"},
		{[]string{"install", "web", "./no-such-chart", "--skip-crds", "--crds", "create"}, "--skip-crds and --crds create contradict each other"},
		{[]string{"upgrade", "web", "./no-such-chart", "--skip-crds", "--crds=create-replace"}, "--skip-crds and --crds create-replace contradict each other"},
		{[]string{"rollback", "web", "1", "--description", strings.Repeat("é", 257)}, "description must be 256 characters or less, got 257"},
		{[]string{"template", "./no-such-chart", "--dry-run=none"}, `invalid dry-run value ("none"). Must be "server" or "client"`},
		{[]string{"template", "./no-such-chart", "--dry-run=server", "--validate"}, "if any flags in the group [validate dry-run] are set none of the others can be"},
	}
	for _, tt := range tests {
		_, _, err := run(t, append(tt.args, "--kubeconfig", "/nonexistent")...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("berth %s: %v, want %q", strings.Join(tt.args, " "), err, tt.want)
		}
	}
}

// TestHelmFlagsHelp: the flags Helm v4 has on install, upgrade, rollback and template are there.
func TestHelmFlagsHelp(t *testing.T) {
	t.Parallel()
	flags := map[string][]string{
		"install": {"--generate-name", "-g,", "--name-template", "--skip-crds", "--replace", "--skip-schema-validation",
			"--render-subchart-notes", "--hide-notes", "--hide-secret", "--enable-dns", "--disable-openapi-validation", "--description"},
		"upgrade": {"--skip-crds", "--skip-schema-validation", "--render-subchart-notes", "--hide-notes", "--hide-secret",
			"--enable-dns", "--disable-openapi-validation", "--cleanup-on-fail", "--description"},
		"rollback": {"--description", "--cleanup-on-fail"},
		"template": {"--dry-run", "--enable-dns", "--create-namespace", "--replace", "--skip-crds", "--labels", "--wait", "--timeout"},
	}
	for cmd, want := range flags {
		stdout, _, err := run(t, cmd, "--help")
		if err != nil {
			t.Fatalf("berth %s --help: %v", cmd, err)
		}
		for _, f := range want {
			if !strings.Contains(stdout, f) {
				t.Errorf("berth %s --help does not show %s", cmd, f)
			}
		}
	}
}
