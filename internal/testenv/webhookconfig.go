package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

const (
	// probeLabel marks the ConfigMap used to probe whether a configuration is in effect.
	probeLabel = "testenv.berth.dev/webhook-probe"
	// activationTimeout bounds the wait for the API server to call a new configuration.
	activationTimeout = time.Minute
)

// WebhookOptions describe a ValidatingWebhookConfiguration for a Webhook.
type WebhookOptions struct {
	// Name of the webhook, as the API server reports it in errors. It must
	// have at least three dot-separated segments. Default "check.webhook.berth.dev".
	Name string
	// Rules select the requests sent to the webhook.
	Rules []admissionregistrationv1.RuleWithOperations
	// FailurePolicy applies when the webhook cannot be called. Default Fail.
	FailurePolicy admissionregistrationv1.FailurePolicyType
	// TimeoutSeconds bounds each call, 1 to 30. Default 10.
	TimeoutSeconds int32
}

// Rule selects operations on resources for WebhookOptions.Rules; "*" matches all.
func Rule(operations []admissionregistrationv1.OperationType, apiGroups, apiVersions, resources []string) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: operations,
		Rule: admissionregistrationv1.Rule{
			APIGroups:   apiGroups,
			APIVersions: apiVersions,
			Resources:   resources,
		},
	}
}

// RegisterValidatingWebhook creates a ValidatingWebhookConfiguration that
// sends the requests matching opts.Rules in the test's namespace to w, waits
// until the API server calls it, and deletes it when the test ends.
//
// The namespaceSelector keeps namespaced requests of other tests away from
// w; rules on cluster-scoped resources match them all, from every test of
// the package.
func (e *Env) RegisterValidatingWebhook(t testing.TB, w *Webhook, opts WebhookOptions) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	ctx := t.Context()
	cfg := e.webhookConfiguration(w, opts)
	client := e.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	cfg, err := client.Create(ctx, cfg, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("testenv: create ValidatingWebhookConfiguration: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		err := client.Delete(ctx, cfg.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("testenv: delete ValidatingWebhookConfiguration/%s: %v", cfg.Name, err)
		}
	})
	if err := e.waitForWebhook(ctx, cfg.Name); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return cfg
}

// webhookConfiguration builds the configuration for opts, plus a probe webhook
// that denies ConfigMaps labeled with the configuration's name. Probes never
// reach the webhook of opts, so they do not count as its requests.
func (e *Env) webhookConfiguration(w *Webhook, opts WebhookOptions) *admissionregistrationv1.ValidatingWebhookConfiguration {
	if opts.Name == "" {
		opts.Name = "check.webhook.berth.dev"
	}
	if opts.FailurePolicy == "" {
		opts.FailurePolicy = admissionregistrationv1.Fail
	}
	if opts.TimeoutSeconds == 0 {
		opts.TimeoutSeconds = 10
	}
	name := e.Namespace + "-" + sanitize(opts.Name)
	namespace := &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: e.Namespace}}
	notProbe := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: probeLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
	}}
	none := admissionregistrationv1.SideEffectClassNone
	probeURL := strings.TrimSuffix(w.URL, validatePath) + probePath
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{
				Name:                    opts.Name,
				ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &w.URL, CABundle: w.CABundle},
				Rules:                   opts.Rules,
				FailurePolicy:           &opts.FailurePolicy,
				NamespaceSelector:       namespace,
				ObjectSelector:          notProbe,
				SideEffects:             &none,
				TimeoutSeconds:          &opts.TimeoutSeconds,
				AdmissionReviewVersions: []string{"v1"},
			},
			{
				Name:         "probe.testenv.berth.dev",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &probeURL, CABundle: w.CABundle},
				Rules: []admissionregistrationv1.RuleWithOperations{Rule(
					[]admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					[]string{""}, []string{"v1"}, []string{"configmaps"},
				)},
				FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
				NamespaceSelector:       namespace,
				ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{probeLabel: probeID(name)}},
				SideEffects:             &none,
				TimeoutSeconds:          ptr.To[int32](5),
				AdmissionReviewVersions: []string{"v1"},
			},
		},
	}
}

// waitForWebhook waits until the API server calls the configuration named
// name: until a dry-run create of a probe ConfigMap fails because of it.
func (e *Env) waitForWebhook(ctx context.Context, name string) error {
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "webhook-probe-",
		Labels:       map[string]string{probeLabel: probeID(name)},
	}}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, activationTimeout, true,
		func(ctx context.Context) (bool, error) {
			_, last = e.Client.CoreV1().ConfigMaps(e.Namespace).Create(ctx, probe, dryRun)
			return last != nil && strings.Contains(last.Error(), "probe.testenv.berth.dev"), nil
		})
	if err != nil {
		return fmt.Errorf("wait for ValidatingWebhookConfiguration/%s to take effect: %w (last probe: %v)", name, err, last)
	}
	return nil
}

// probeID is a label value (at most 63 characters) that stands for a configuration's name,
// however long the test and webhook names make it.
func probeID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:8])
}
