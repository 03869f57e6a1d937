package controller

import (
	"fmt"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/controller/status"
	"github.com/berthdev/berth/internal/doctor"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

// A preflight's refusal, however the operation wraps it, is PreflightBlocked with a one-line
// message naming the first blocker and what to do, and a blocker each in the status.
func TestPreflightBlockedError(t *testing.T) {
	webhook := doctor.Finding{Severity: doctor.Blocker, Check: "webhook",
		Object:  resource.Identity{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration", Name: "dead"},
		Problem: `webhook "dead.example.com" (failurePolicy Fail, timeoutSeconds 5) cannot answer`,
		Breaks:  "the API server calls it for CREATE of ConfigMap/team-a/web-config, which fails",
		Fix:     "bring its backend up"}
	apiService := doctor.Finding{Severity: doctor.Blocker, Check: "apiservice",
		Object:  resource.Identity{Group: "apiregistration.k8s.io", Kind: "APIService", Name: "v1.metrics.example.com"},
		Problem: "not Available", Breaks: "discovery fails", Fix: "bring service x/y back"}
	for _, tc := range []struct {
		op       release.Operation
		findings []doctor.Finding
		says     []string
	}{
		{release.OpInstall, []doctor.Finding{webhook}, []string{
			"install of release web in namespace team-a would be blocked; nothing was changed",
			"MutatingWebhookConfiguration.admissionregistration.k8s.io/dead", "CREATE of ConfigMap/team-a/web-config",
			"fix: bring its backend up", "spec.skipPreflight"}},
		{release.OpUpgrade, []doctor.Finding{webhook, apiService}, []string{"dead.example.com", "and 1 more blocker(s): see status.blockers"}},
		{release.OpUninstall, []doctor.Finding{apiService}, []string{"APIService.apiregistration.k8s.io/v1.metrics.example.com", "tried again by itself"}},
	} {
		t.Run(string(tc.op), func(t *testing.T) {
			pre := &doctor.PreflightError{Operation: tc.op, Release: "web", Namespace: "team-a", Findings: tc.findings}
			err := fmt.Errorf("upgrade web: %w", &PreflightBlockedError{PreflightError: pre})
			if got := reasonOf(err, ReasonInstallFailed); got != ReasonPreflightBlocked {
				t.Errorf("reason %s, want %s", got, ReasonPreflightBlocked)
			}
			line := errorLine(err)
			if line != status.ErrorText(err) {
				t.Errorf("the message is more than one line:\n%s", status.ErrorText(err))
			}
			for _, want := range tc.says {
				if !strings.Contains(line, want) {
					t.Errorf("message does not say %q:\n%s", want, line)
				}
			}
			blockers := blockersOf(err, nil)
			if len(blockers) != len(tc.findings) {
				t.Fatalf("blockers: %+v, want one for each of %d findings", blockers, len(tc.findings))
			}
			for i, b := range blockers {
				if f := tc.findings[i]; b.Kind != f.Check || b.Object != f.Object.String() || !strings.Contains(b.Next, f.Fix) {
					t.Errorf("blocker %d: %+v, want kind %s, object %s and its fix", i, b, f.Check, f.Object)
				}
			}
		})
	}
}
