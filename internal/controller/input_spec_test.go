package controller

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller/status"
)

func TestDesiredOf(t *testing.T) {
	base := func(mod func(*v1alpha1.Release)) *v1alpha1.Release {
		rel := &v1alpha1.Release{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a"},
			Spec: v1alpha1.ReleaseSpec{
				Chart:  v1alpha1.ChartSource{Repository: "https://charts.example.test", Name: "web", Version: "0.3.0"},
				Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2}`)},
			},
		}
		if mod != nil {
			mod(rel)
		}
		return rel
	}
	tests := []struct {
		name string
		rel  *v1alpha1.Release
		want func(*desired) any
		// wantField is the field a SpecError names; wantReason its reason.
		wantField, wantReason string
		wantValue             any
	}{
		{name: "defaults", rel: base(nil),
			want: func(d *desired) any {
				return []any{d.ReleaseName, d.TargetNamespace, d.ServiceAccount, d.Chart, d.Interval, d.HistoryMax}
			},
			wantValue: []any{"web", "team-a", "", chartRef{Ref: "web", RepoURL: "https://charts.example.test", Version: "0.3.0"}, defaultInterval, defaultHistoryMax}},
		{name: "oci with name", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Chart = v1alpha1.ChartSource{Repository: "oci://registry.example.test/charts", Name: "web", Version: "0.3.0"}
		}), want: func(d *desired) any { return d.Chart },
			wantValue: chartRef{Ref: "oci://registry.example.test/charts/web", Version: "0.3.0"}},
		{name: "oci naming the chart, with a digest", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Chart = v1alpha1.ChartSource{Repository: "oci://registry.example.test/charts/web", Digest: "sha256:abc"}
		}), want: func(d *desired) any { return d.Chart },
			wantValue: chartRef{Ref: "oci://registry.example.test/charts/web@sha256:abc"}},
		{name: "private repository", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Chart.Credentials = &v1alpha1.SecretReference{Name: "repo-creds"}
			r.Spec.Chart.TLS = &v1alpha1.SecretReference{Name: "repo-tls"}
			r.Spec.Chart.PassCredentials = true
		}), want: func(d *desired) any { return d.Chart },
			wantValue: chartRef{Ref: "web", RepoURL: "https://charts.example.test", Version: "0.3.0", Credentials: "repo-creds", TLS: "repo-tls", PassCredentials: true}},
		{name: "oci over plain HTTP", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Chart = v1alpha1.ChartSource{Repository: "oci://registry.example.test/charts/web", PlainHTTP: true}
		}), want: func(d *desired) any { return d.Chart },
			wantValue: chartRef{Ref: "oci://registry.example.test/charts/web", PlainHTTP: true}},
		{name: "credentials over plain HTTP to a registry", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Chart = v1alpha1.ChartSource{Repository: "oci://registry.example.test/charts/web", PlainHTTP: true,
				Credentials: &v1alpha1.SecretReference{Name: "pull-secret"}}
		}), wantField: "chart.plainHTTP", wantReason: ReasonInsecureCredentials},
		{name: "credentials over plain HTTP to a repository", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Chart = v1alpha1.ChartSource{Repository: "http://charts.example.test", Name: "web",
				Credentials: &v1alpha1.SecretReference{Name: "repo-creds"}}
		}), wantField: "chart.repository", wantReason: ReasonInsecureCredentials},
		{name: "plain HTTP of a Helm repository", rel: base(func(r *v1alpha1.Release) { r.Spec.Chart.PlainHTTP = true }),
			wantField: "chart.plainHTTP", wantReason: ReasonInvalidSpec},
		{name: "passCredentials of an OCI registry", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Chart = v1alpha1.ChartSource{Repository: "oci://registry.example.test/charts/web", PassCredentials: true}
		}), wantField: "chart.passCredentials", wantReason: ReasonInvalidSpec},
		{name: "credentials of a chart in a Secret", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Chart = v1alpha1.ChartSource{SecretRef: &v1alpha1.KeyReference{Name: "chart", Key: "web.tgz"},
				Credentials: &v1alpha1.SecretReference{Name: "repo-creds"}}
		}), wantField: "chart", wantReason: ReasonInvalidSpec},
		{name: "verify with its default key", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Chart.Verify = &v1alpha1.KeyringReference{Name: "keyring"}
		}), want: func(d *desired) any { return d.Chart },
			wantValue: chartRef{Ref: "web", RepoURL: "https://charts.example.test", Version: "0.3.0", Verify: "keyring", VerifyKey: "pubring.gpg"}},
		{name: "verify of an OCI chart, with a key", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Chart = v1alpha1.ChartSource{Repository: "oci://registry.example.test/charts/web", Verify: &v1alpha1.KeyringReference{Name: "keyring", Key: "trusted.gpg"}}
		}), want: func(d *desired) any { return d.Chart },
			wantValue: chartRef{Ref: "oci://registry.example.test/charts/web", Verify: "keyring", VerifyKey: "trusted.gpg"}},
		{name: "verify without a name", rel: base(func(r *v1alpha1.Release) { r.Spec.Chart.Verify = &v1alpha1.KeyringReference{} }),
			wantField: "chart.verify.name", wantReason: ReasonInvalidSpec},
		{name: "verify of a chart in a ConfigMap", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Chart = v1alpha1.ChartSource{ConfigMapRef: &v1alpha1.KeyReference{Name: "chart", Key: "web.tgz"},
				Verify: &v1alpha1.KeyringReference{Name: "keyring"}}
		}), wantField: "chart", wantReason: ReasonInvalidSpec},
		{name: "no repository", rel: base(func(r *v1alpha1.Release) { r.Spec.Chart.Repository = "" }),
			wantField: "chart.repository", wantReason: ReasonInvalidSpec},
		{name: "not a URL", rel: base(func(r *v1alpha1.Release) { r.Spec.Chart.Repository = "stable" }),
			wantField: "chart.repository", wantReason: ReasonInvalidSpec},
		{name: "repository without name", rel: base(func(r *v1alpha1.Release) { r.Spec.Chart.Name = "" }),
			wantField: "chart.name", wantReason: ReasonInvalidSpec},
		{name: "digest of a repository chart", rel: base(func(r *v1alpha1.Release) { r.Spec.Chart.Digest = "sha256:abc" }),
			wantField: "chart.digest", wantReason: ReasonInvalidSpec},
		{name: "values not a map", rel: base(func(r *v1alpha1.Release) { r.Spec.Values.Raw = []byte(`[1]`) }),
			wantField: "values", wantReason: ReasonInvalidSpec},
		{name: "release moved", rel: base(func(r *v1alpha1.Release) {
			r.Status.ReleaseName, r.Status.TargetNamespace = "web", "team-a"
			r.Spec.TargetNamespace = "team-b"
		}), wantField: "releaseName", wantReason: ReasonInvalidSpec},
		{name: "valuesFrom with its default key", rel: base(func(r *v1alpha1.Release) {
			r.Spec.ValuesFrom = []v1alpha1.ValuesReference{{Kind: "Secret", Name: "x"}, {Kind: "ConfigMap", Name: "y", Key: "prod.yaml"}}
		}), want: func(d *desired) any { return d.ValuesFrom },
			wantValue: []v1alpha1.ValuesReference{{Kind: "Secret", Name: "x", Key: "values.yaml"}, {Kind: "ConfigMap", Name: "y", Key: "prod.yaml"}}},
		{name: "valuesFrom of another kind", rel: base(func(r *v1alpha1.Release) {
			r.Spec.ValuesFrom = []v1alpha1.ValuesReference{{Kind: "Pod", Name: "x"}}
		}), wantField: "valuesFrom[0].kind", wantReason: ReasonInvalidSpec},
		{name: "valuesFrom decrypted by another provider", rel: base(func(r *v1alpha1.Release) {
			r.Spec.ValuesFrom = []v1alpha1.ValuesReference{{Kind: "Secret", Name: "x"}, {Kind: "Secret", Name: "y", Decrypt: &v1alpha1.ValuesDecryption{Provider: "vault", SecretRef: v1alpha1.SecretReference{Name: "k"}}}}
		}), wantField: "valuesFrom[1].decrypt.provider", wantReason: ReasonInvalidSpec},
		{name: "valuesFrom decrypted without keys", rel: base(func(r *v1alpha1.Release) {
			r.Spec.ValuesFrom = []v1alpha1.ValuesReference{{Kind: "Secret", Name: "y", Decrypt: &v1alpha1.ValuesDecryption{Provider: "sops"}}}
		}), wantField: "valuesFrom[0].decrypt.secretRef.name", wantReason: ReasonInvalidSpec},
		{name: "valuesFrom decrypted at a targetPath", rel: base(func(r *v1alpha1.Release) {
			r.Spec.ValuesFrom = []v1alpha1.ValuesReference{{Kind: "Secret", Name: "y", TargetPath: "a.b", Decrypt: &v1alpha1.ValuesDecryption{Provider: "sops", SecretRef: v1alpha1.SecretReference{Name: "k"}}}}
		}), wantField: "valuesFrom[0].decrypt", wantReason: ReasonInvalidSpec},
		{name: "dependsOn, once each", rel: base(func(r *v1alpha1.Release) {
			r.Spec.DependsOn = []v1alpha1.DependencyReference{{Name: "db"}, {Name: "cache", Namespace: "team-a"}, {Name: "db"}}
		}), want: func(d *desired) any { return d.DependsOn }, wantValue: []string{"db", "cache"}},
		{name: "dependsOn another namespace", rel: base(func(r *v1alpha1.Release) {
			r.Spec.DependsOn = []v1alpha1.DependencyReference{{Name: "db"}, {Name: "db", Namespace: "team-b"}}
		}), wantField: "dependsOn[1].namespace", wantReason: ReasonInvalidSpec},
		{name: "dependsOn without a name", rel: base(func(r *v1alpha1.Release) {
			r.Spec.DependsOn = []v1alpha1.DependencyReference{{}}
		}), wantField: "dependsOn[0].name", wantReason: ReasonInvalidSpec},
		{name: "chart in a Secret", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Chart = v1alpha1.ChartSource{SecretRef: &v1alpha1.KeyReference{Name: "c", Key: "web.tgz"}}
		}), want: func(d *desired) any { return d.ChartIn },
			wantValue: &chartObject{Kind: "Secret", Name: "c", Key: "web.tgz", Field: "chart.secretRef"}},
		{name: "chart in a ConfigMap without a key", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Chart = v1alpha1.ChartSource{ConfigMapRef: &v1alpha1.KeyReference{Name: "c"}}
		}), wantField: "chart.configMapRef.key", wantReason: ReasonInvalidSpec},
		{name: "chart in a Secret with a version", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Chart = v1alpha1.ChartSource{SecretRef: &v1alpha1.KeyReference{Name: "c", Key: "web.tgz"}, Version: "1.0.0"}
		}), wantField: "chart", wantReason: ReasonInvalidSpec},
		{name: "drift off by default", rel: base(nil),
			want: func(d *desired) any { return d.Drift }, wantValue: driftRules{Mode: v1alpha1.DriftDisabled}},
		{name: "drift detection with ignore rules", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Drift = &v1alpha1.DriftSpec{Mode: v1alpha1.DriftDetect, Ignore: []v1alpha1.DriftIgnore{
				{Paths: []string{"/spec/replicas"}, Kind: "Deployment"},
				{Paths: []string{"/metadata/labels/app.kubernetes.io~1version", "/data/a~0b"}, Name: "web"},
			}}
		}), want: func(d *desired) any { return d.Drift },
			wantValue: driftRules{Mode: v1alpha1.DriftDetect, Ignore: []ignoreRule{
				{Kind: "Deployment", Paths: [][]string{{"spec", "replicas"}}},
				{Name: "web", Paths: [][]string{{"metadata", "labels", "app.kubernetes.io/version"}, {"data", "a~b"}}},
			}}},
		{name: "drift disabled is fine", rel: base(func(r *v1alpha1.Release) { r.Spec.Drift = &v1alpha1.DriftSpec{Mode: v1alpha1.DriftDisabled} }),
			want: func(d *desired) any { return d.ReleaseName }, wantValue: "web"},
		{name: "ignore path not a pointer", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Drift = &v1alpha1.DriftSpec{Mode: v1alpha1.DriftDetect, Ignore: []v1alpha1.DriftIgnore{{Paths: []string{"spec.replicas"}}}}
		}), wantField: "drift.ignore[0].paths[0]", wantReason: ReasonInvalidSpec},
		{name: "ignore path with a bad escape", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Drift = &v1alpha1.DriftSpec{Mode: v1alpha1.DriftCorrect, Ignore: []v1alpha1.DriftIgnore{{Paths: []string{"/data/a~2"}}}}
		}), wantField: "drift.ignore[0].paths[0]", wantReason: ReasonInvalidSpec},
		{name: "ignore of the whole object", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Drift = &v1alpha1.DriftSpec{Mode: v1alpha1.DriftCorrect, Ignore: []v1alpha1.DriftIgnore{{Paths: []string{""}}}}
		}), wantField: "drift.ignore[0].paths[0]", wantReason: ReasonInvalidSpec},
		{name: "tests with filters", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Test = &v1alpha1.TestSpec{Enable: true, Filters: []string{"name=smoke", "!name=slow", "! name=flaky"}}
		}), want: func(d *desired) any { return d.Test },
			wantValue: testRules{Enable: true, Include: []string{"smoke"}, Exclude: []string{"slow", "flaky"}}},
		{name: "test filter of another form", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Test = &v1alpha1.TestSpec{Enable: true, Filters: []string{"smoke"}}
		}), wantField: "test.filters[0]", wantReason: ReasonInvalidSpec},
		{name: "retries", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Upgrade = &v1alpha1.UpgradeSpec{OperationSpec: v1alpha1.OperationSpec{Retries: 3}}
		}), want: func(d *desired) any { return d.Upgrade.Retries }, wantValue: int32(3)},
		{name: "retry backoff not positive", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Install = &v1alpha1.InstallSpec{OperationSpec: v1alpha1.OperationSpec{Retries: 1, RetryBackoff: &metav1.Duration{}}}
		}), wantField: "install.retryBackoff", wantReason: ReasonInvalidSpec},
		{name: "retry backoff under its floor", rel: base(func(r *v1alpha1.Release) {
			r.Spec.Upgrade = &v1alpha1.UpgradeSpec{OperationSpec: v1alpha1.OperationSpec{Retries: 1, RetryBackoff: &metav1.Duration{Duration: time.Nanosecond}}}
		}), wantField: "upgrade.retryBackoff", wantReason: ReasonInvalidSpec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := desiredOf(tt.rel)
			if tt.wantField != "" {
				var se *SpecError
				if !errors.As(err, &se) || se.Field != tt.wantField || se.Reason != tt.wantReason {
					t.Fatalf("got %v, want a %s error naming spec.%s", err, tt.wantReason, tt.wantField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantValue, tt.want(d)); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestValuesDigestIgnoresKeyOrder(t *testing.T) {
	digest := func(raw string) string {
		_, d, err := valuesOf(v1alpha1.ReleaseSpec{Values: &apiextensionsv1.JSON{Raw: []byte(raw)}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if a, b := digest(`{"a":1,"b":{"c":2,"d":3}}`), digest(`{"b":{"d":3,"c":2},"a":1}`); a != b {
		t.Errorf("digests differ: %s, %s", a, b)
	}
	if a, b := digest(`{"a":1}`), digest(`{"a":2}`); a == b {
		t.Errorf("different values have one digest %s", a)
	}
}

func TestEventNoteFitsAnEvent(t *testing.T) {
	for _, n := range []int{10, status.MaxEventNote, status.MaxEventNote + 1, 5000} {
		msg := strings.Repeat("é", n/2) + strings.Repeat("x", n%2)
		got := status.EventNote(nil, errors.New(msg))
		if len(got) > status.MaxEventNote || !utf8.ValidString(got) {
			t.Errorf("note of a %d-byte error: %d bytes, valid UTF-8 %v", len(msg), len(got), utf8.ValidString(got))
		}
		if len(msg) <= status.MaxEventNote && got != msg {
			t.Errorf("a %d-byte error was cut", len(msg))
		}
	}
}

// TestAccountOf: a Release's own account, else the controller's default, else its namespace's.
func TestAccountOf(t *testing.T) {
	r := &Reconciler{}
	if got := r.serviceAccountFor(""); got != "default" {
		t.Errorf("no account, no default: %q", got)
	}
	r.DefaultServiceAccount = "releaser"
	if got := r.serviceAccountFor(""); got != "releaser" {
		t.Errorf("no account: %q, want the controller's default", got)
	}
	if got := r.serviceAccountFor("deployer"); got != "deployer" {
		t.Errorf("a named account: %q", got)
	}
}
