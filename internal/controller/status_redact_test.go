package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/controller/status"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/resource"
)

const secret = "Sup3r-S3cret-canary-r3d"

// renderError renders a chart of one template, with a values schema when schema is set, with
// password set to the secret.
func renderError(t *testing.T, schema, template string) error {
	t.Helper()
	ch := &chartv2.Chart{
		Metadata:  &chartv2.Metadata{APIVersion: "v2", Name: "app", Version: "0.1.0"},
		Templates: []*common.File{{Name: "templates/cm.yaml", Data: []byte(template)}},
	}
	if schema != "" {
		ch.Schema = []byte(schema)
	}
	_, err := chart.Render(context.Background(), ch, map[string]any{"password": secret}, chart.RenderOptions{ReleaseName: "web"})
	if err == nil {
		t.Fatal("Render succeeded")
	}
	// As the lifecycle wraps it.
	return fmt.Errorf("upgrade web: %w", err)
}

func failedHook() *lifecycle.HookError {
	return &lifecycle.HookError{
		Event:   resource.HookPreInstall,
		Hook:    resource.Identity{Group: "batch", Kind: "Job", Namespace: "team-a", Name: "migrate"},
		Outcome: "failed: Job failed: BackoffLimitExceeded: Job has reached the specified backoff limit",
		HookReport: cluster.HookReport{
			Conditions: []string{"Failed: BackoffLimitExceeded: Job has reached the specified backoff limit"},
			Pods: []cluster.PodReport{{Name: "migrate-x", Phase: "Failed", Containers: []string{
				"migrate: terminated, exit code 1 (Error): password " + secret + " refused",
				"wait: waiting: CrashLoopBackOff: " + secret,
				"other: terminated, exit code 2: " + secret,
			}}},
			Events: []string{"Pod/team-a/migrate-x: Warning Failed: " + secret + " (x1)"},
			Logs:   map[string]string{"migrate-x/migrate": "connecting\npassword " + secret + " refused\n"},
		},
	}
}

func TestErrorTextLeavesValuesOut(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "web", field.ErrorList{
		field.Invalid(field.NewPath("metadata", "labels"), secret, "a valid label must be ..."),
		field.Required(field.NewPath("data"), ""),
	})
	unborn := &lifecycle.HookError{
		Event: resource.HookPreInstall, Hook: resource.Identity{Kind: "Pod", Namespace: "team-a", Name: "seed"},
		Cause: invalid, Outcome: "could not be created: " + invalid.Error(),
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"a values schema", renderError(t, `{"properties": {"password": {"pattern": "^[a-z]+$"}}}`, "a: b\n"),
			"upgrade web: chart app: values don't meet the schema(s) (values left out): chart app: '/password': pattern"},
		{"a template's fail", renderError(t, "", "x: {{ fail (printf \"bad password %s\" .Values.password) }}\n"),
			"upgrade web: render chart app: template app/templates/cm.yaml:1:6 failed (its message is left out, as it can print values)"},
		{"a template's required", renderError(t, "", "x: {{ required (printf \"%s refused\" .Values.password) .Values.none }}\n"),
			"upgrade web: render chart app: template app/templates/cm.yaml:1:6 failed"},
		{"a failed hook", fmt.Errorf("install web: %w", failedHook()),
			"install web: pre-install hook Job.batch/team-a/migrate failed: Job failed: BackoffLimitExceeded: Job has reached the specified backoff limit; " +
				"last Pod migrate-x: Failed, migrate: terminated, exit code 1 (Error), wait: waiting: CrashLoopBackOff, other: terminated, exit code 2"},
		{"a hook the API server refused", fmt.Errorf("install web: %w", unborn),
			"install web: pre-install hook Pod/team-a/seed could not be created: ConfigMap web is invalid: metadata.labels (FieldValueInvalid), data (FieldValueRequired)"},
		{"an invalid object", fmt.Errorf("ConfigMap/team-a/web: apply: %w", invalid),
			"ConfigMap/team-a/web: apply: ConfigMap web is invalid: metadata.labels (FieldValueInvalid), data (FieldValueRequired) (the API server's message is left out"},
		{"joined", errors.Join(failedHook(), fmt.Errorf("delete: %w", invalid)),
			"pre-install hook Job.batch/team-a/migrate failed"},
		// Only the redacted forms are left, without the wrappers' words.
		{"a wrapper that rewrote the message", &rewriter{renderError(t, "", "x: {{ fail .Values.password }}\n")},
			"template app/templates/cm.yaml:1:6 failed (its message is left out, as it can print values)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(tt.err.Error(), secret) && tt.name != "joined" {
				t.Fatalf("the test's error does not hold the secret: %v", tt.err)
			}
			got := status.ErrorText(tt.err)
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("errorText =\n%s\nwant it to start with\n%s", got, tt.want)
			}
			for what, text := range map[string]string{"errorText": got, "errorLine": errorLine(tt.err), "eventNote": status.EventNote(nil, tt.err)} {
				if strings.Contains(text, "Sup3r") {
					t.Errorf("%s holds the secret: %s", what, text)
				}
			}
		})
	}
}

// rewriter is a wrapper that does not keep its error's message as it is.
type rewriter struct{ err error }

func (r *rewriter) Error() string { return strings.ReplaceAll(r.err.Error(), ": ", " | ") }
func (r *rewriter) Unwrap() error { return r.err }

func TestFailedStatusLeavesValuesOut(t *testing.T) {
	tests := []struct {
		name        string
		err         error
		blocker     v1alpha1.Blocker
		wantLogTail string
	}{
		{"a failed hook", fmt.Errorf("install web: %w", failedHook()), v1alpha1.Blocker{
			Kind: "hook", Object: "Job.batch/team-a/migrate",
			Message: "pre-install hook failed: Job failed: BackoffLimitExceeded: Job has reached the specified backoff limit; " +
				"last Pod migrate-x: Failed, migrate: terminated, exit code 1 (Error), wait: waiting: CrashLoopBackOff, other: terminated, exit code 2",
		}, "password " + secret + " refused"},
		{"a template's fail", renderError(t, "", "x: {{ fail (printf \"bad password %s\" .Values.password) }}\n"), v1alpha1.Blocker{
			Kind: "template", Object: "app/templates/cm.yaml:1:6",
			Message: "template app/templates/cm.yaml:1:6 failed (its message is left out, as it can print values)",
		}, "bad password " + secret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel := &v1alpha1.Release{}
			markFailed(rel, reasonOf(tt.err, ReasonInstallFailed), tt.err, true)
			addHistory(rel, operationRecord("install", time.Now(), time.Now(), 0, "0.1.0", tt.err))
			if len(rel.Status.Blockers) != 1 {
				t.Fatalf("blockers: %+v, want one", rel.Status.Blockers)
			}
			b := rel.Status.Blockers[0]
			if b.Kind != tt.blocker.Kind || b.Object != tt.blocker.Object || b.Message != tt.blocker.Message {
				t.Errorf("blocker %s %s: %s\nwant %s %s: %s", b.Kind, b.Object, b.Message, tt.blocker.Kind, tt.blocker.Object, tt.blocker.Message)
			}
			// With --status-chart-output, the chart's own output is in logTail, and only there.
			allowed := rel.DeepCopy()
			status.Redact(allowed, true, nil)
			if !strings.Contains(allowed.Status.Blockers[0].LogTail, tt.wantLogTail) {
				t.Errorf("logTail with the chart's output allowed: %q, want it to hold %q", allowed.Status.Blockers[0].LogTail, tt.wantLogTail)
			}
			status.Redact(rel, false, nil)
			if b := rel.Status.Blockers[0]; b.LogTail != "" {
				t.Errorf("logTail %q without the chart's output allowed", b.LogTail)
			}
			for _, c := range rel.Status.Conditions {
				if strings.Contains(c.Message, "Sup3r") {
					t.Errorf("condition %s holds the secret: %s", c.Type, c.Message)
				}
			}
			if strings.Contains(rel.Status.History[0].Message, "Sup3r") || strings.Contains(b.Message, "Sup3r") {
				t.Errorf("history or blocker holds the secret: %+v", rel.Status)
			}
		})
	}
}
