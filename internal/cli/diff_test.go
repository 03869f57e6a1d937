package cli

import (
	"encoding/json"
	"fmt"
	"github.com/berthdev/berth/internal/plan"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/diff"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/testenv"
)

// diffChart is a chart with a value in a ConfigMap, a password in a Secret, a Deployment and a
// pre-delete hook.
func diffChart(t *testing.T) string {
	return writeChart(t, "dock", map[string]string{
		"values.yaml":            "mode: fast\npassword: hunter2\n",
		"templates/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: {{ .Values.mode | quote }}, size: \"3\"}\n",
		"templates/secret.yaml":  "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ndata: {password: {{ .Values.password | b64enc | quote }}, user: {{ \"admin\" | b64enc | quote }}}\n",
		"templates/deploy.yaml":  deploymentOf("web", "0s"),
		"templates/cleanup.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: cleanup\n  annotations: {helm.sh/hook: pre-delete, helm.sh/hook-weight: \"-2\", helm.sh/hook-delete-policy: hook-succeeded}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: example.invalid/c}]\n",
	})
}

// berthDiff runs berth diff with -o json and returns the result.
func berthDiff(t *testing.T, env *testenv.Env, args ...string) (*diff.Result, error) {
	t.Helper()
	out, err := berthIn(t, env, append([]string{"diff"}, append(args, "-o", "json")...)...)
	if out == "" {
		return nil, err
	}
	var r diff.Result
	if jerr := json.Unmarshal([]byte(out), &r); jerr != nil {
		t.Fatalf("berth diff printed what is not JSON: %v\n%s", jerr, out)
	}
	if r.SchemaVersion != diff.SchemaVersion {
		t.Errorf("schemaVersion = %q, want %q", r.SchemaVersion, diff.SchemaVersion)
	}
	return &r, err
}

// changedLines are the lines a unified diff removes and adds, without its headers.
func changedLines(d string) []string {
	var out []string
	for _, l := range strings.Split(d, "\n") {
		if (strings.HasPrefix(l, "-") || strings.HasPrefix(l, "+")) && !strings.HasPrefix(l, "---") && !strings.HasPrefix(l, "+++") {
			out = append(out, l)
		}
	}
	return out
}

func objectsWith(r *diff.Result, c diff.Change) []resource.Identity {
	var out []resource.Identity
	for _, o := range r.Objects {
		if o.Change == c {
			out = append(out, o.Identity)
		}
	}
	return out
}

func TestDiffUpgrade(t *testing.T) {
	env := testenv.New(t)
	ch := diffChart(t)
	if _, err := berthIn(t, env, "install", "dock", ch); err != nil {
		t.Fatalf("berth install: %v", err)
	}
	cm := resource.Identity{Kind: "ConfigMap", Namespace: env.Namespace, Name: "settings"}
	secret := resource.Identity{Kind: "Secret", Namespace: env.Namespace, Name: "creds"}
	deploy := resource.Identity{Group: "apps", Kind: "Deployment", Namespace: env.Namespace, Name: "web"}

	t.Run("no change", func(t *testing.T) {
		r, err := berthDiff(t, env, "upgrade", "dock", ch, "--detailed-exitcode")
		if err != nil {
			t.Fatalf("berth diff upgrade: %v (exit code %d)", err, ExitCode(err))
		}
		if r.HasChanges() || r.Summary.Unchanged != 3 {
			t.Errorf("summary = %+v, want 3 unchanged and nothing else", r.Summary)
		}
		out, err := berthIn(t, env, "diff", "upgrade", "dock", ch)
		if err != nil {
			t.Fatalf("berth diff upgrade: %v", err)
		}
		if strings.Contains(out, "@@") || strings.Contains(out, "---") {
			t.Errorf("berth diff upgrade without changes printed a diff:\n%s", out)
		}
		if !strings.Contains(out, "0 created, 0 configured, 0 deleted, 3 unchanged") {
			t.Errorf("berth diff upgrade printed no summary line:\n%s", out)
		}
	})

	t.Run("value change", func(t *testing.T) {
		r, err := berthDiff(t, env, "upgrade", "dock", ch, "--set", "mode=slow", "--detailed-exitcode")
		if ExitCode(err) != ExitChanges {
			t.Fatalf("berth diff upgrade --detailed-exitcode with a change: exit code %d (%v), want %d", ExitCode(err), err, ExitChanges)
		}
		if got := objectsWith(r, plan.Configured); !cmp.Equal(got, []resource.Identity{cm}) {
			t.Fatalf("changed objects = %v, want only %s", got, cm)
		}
		want := []string{`-  mode: fast`, `+  mode: slow`}
		if got := changedLines(r.Objects[slices.IndexFunc(r.Objects, func(o diff.Object) bool { return o.Identity == cm })].Diff); !cmp.Equal(got, want) {
			t.Errorf("diff of %s changes %q, want %q", cm, got, want)
		}
		if r.Record.Revision != 2 || !slices.Equal(r.Record.Superseded, []int{1}) {
			t.Errorf("record = %+v, want revision 2 with revision 1 superseded", r.Record)
		}
		// Nothing changed in the cluster.
		live, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "settings", metav1.GetOptions{})
		if err != nil || live.Data["mode"] != "fast" {
			t.Errorf("after berth diff, ConfigMap settings has mode %q (%v), want fast", live.Data["mode"], err)
		}
	})

	t.Run("secret change is masked", func(t *testing.T) {
		r, err := berthDiff(t, env, "upgrade", "dock", ch, "--set", "password=swordfish")
		if err != nil {
			t.Fatalf("berth diff upgrade: %v", err)
		}
		i := slices.IndexFunc(r.Objects, func(o diff.Object) bool { return o.Identity == secret })
		if i < 0 || r.Objects[i].Change != plan.Configured {
			t.Fatalf("objects = %+v, want %s changed", r.Objects, secret)
		}
		want := []string{`-  password: (masked, before)`, `+  password: (masked, changed)`}
		if got := changedLines(r.Objects[i].Diff); !cmp.Equal(got, want) {
			t.Errorf("diff of %s changes %q, want %q", secret, got, want)
		}
		for _, clear := range []string{"hunter2", "aHVudGVyMg==", "swordfish", "c3dvcmRmaXNo", "YWRtaW4="} {
			if strings.Contains(r.Objects[i].Diff, clear) {
				t.Errorf("diff of %s shows %q:\n%s", secret, clear, r.Objects[i].Diff)
			}
		}
		r, err = berthDiff(t, env, "upgrade", "dock", ch, "--set", "password=swordfish", "--show-secrets")
		if err != nil {
			t.Fatalf("berth diff upgrade --show-secrets: %v", err)
		}
		i = slices.IndexFunc(r.Objects, func(o diff.Object) bool { return o.Identity == secret })
		want = []string{`-  password: aHVudGVyMg==`, `+  password: c3dvcmRmaXNo`}
		if got := changedLines(r.Objects[i].Diff); !cmp.Equal(got, want) {
			t.Errorf("with --show-secrets, diff of %s changes %q, want %q", secret, got, want)
		}
	})

	t.Run("hand edit", func(t *testing.T) {
		// Someone scales the Deployment by hand and labels it: berth's apply puts the replicas
		// back, and leaves the label it does not set alone.
		patch := `{"metadata":{"labels":{"team":"ops"}},"spec":{"replicas":4}}`
		if _, err := env.Client.AppsV1().Deployments(env.Namespace).Patch(t.Context(), "web", types.MergePatchType, []byte(patch),
			metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}
		r, err := berthDiff(t, env, "upgrade", "dock", ch)
		if err != nil {
			t.Fatalf("berth diff upgrade: %v", err)
		}
		if got := objectsWith(r, plan.Configured); !cmp.Equal(got, []resource.Identity{deploy}) {
			t.Fatalf("changed objects = %v, want only %s", got, deploy)
		}
		i := slices.IndexFunc(r.Objects, func(o diff.Object) bool { return o.Identity == deploy })
		want := []string{`-  replicas: 4`, `+  replicas: 1`}
		if got := changedLines(r.Objects[i].Diff); !cmp.Equal(got, want) {
			t.Errorf("diff of %s changes %q, want %q", deploy, got, want)
		}
	})
}

func TestDiffInstall(t *testing.T) {
	env := testenv.New(t)
	ch := diffChart(t)
	r, err := berthDiff(t, env, "install", "dock", ch, "--detailed-exitcode")
	if ExitCode(err) != ExitChanges {
		t.Fatalf("berth diff install: exit code %d (%v), want %d", ExitCode(err), err, ExitChanges)
	}
	if r.Summary != (diff.Summary{Created: 3}) {
		t.Errorf("summary = %+v, want 3 created", r.Summary)
	}
	if r.Record.Revision != 1 || r.Record.Status != "deployed" {
		t.Errorf("record = %+v, want revision 1 deployed", r.Record)
	}
	if _, err := berthIn(t, env, "status", "dock"); err == nil {
		t.Error("berth diff install recorded the release")
	}
}

func TestDiffUninstall(t *testing.T) {
	env := testenv.New(t)
	ch := diffChart(t)
	if _, err := berthIn(t, env, "install", "dock", ch); err != nil {
		t.Fatalf("berth install: %v", err)
	}
	r, err := berthDiff(t, env, "uninstall", "dock", "--detailed-exitcode")
	if ExitCode(err) != ExitChanges {
		t.Fatalf("berth diff uninstall: exit code %d (%v), want %d", ExitCode(err), err, ExitChanges)
	}
	wantHooks := []diff.Hook{{Event: resource.HookPreDelete, Identity: resource.Identity{Group: "batch", Kind: "Job", Namespace: env.Namespace, Name: "cleanup"},
		Weight: -2, DeletePolicies: []resource.DeletePolicy{resource.HookSucceeded}}}
	if d := cmp.Diff(wantHooks, r.Hooks); d != "" {
		t.Errorf("hooks (-want +got):\n%s", d)
	}
	// The deletions in the order uninstall's own plan has them.
	out, err := berthIn(t, env, "uninstall", "dock", "--dry-run", "-o", "json")
	if err != nil {
		t.Fatalf("berth uninstall --dry-run: %v", err)
	}
	var res lifecycle.UninstallResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	var planned []resource.Identity
	for _, s := range res.Plan.Steps {
		if s.Action == "delete" {
			planned = append(planned, s.Objects...)
		}
	}
	if got := objectsWith(r, plan.Deleted); len(planned) != 3 || !cmp.Equal(got, planned) {
		t.Errorf("deleted objects = %v, want uninstall's order %v", got, planned)
	}
	if r.Record.Status != "removed" {
		t.Errorf("record = %+v, want the records removed", r.Record)
	}
	r, err = berthDiff(t, env, "uninstall", "dock", "--keep-history")
	if err != nil {
		t.Fatalf("berth diff uninstall --keep-history: %v", err)
	}
	if r.Record.Status != "uninstalled" || r.Record.Revision != 1 {
		t.Errorf("with --keep-history, record = %+v, want revision 1 uninstalled", r.Record)
	}
	if _, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "settings", metav1.GetOptions{}); err != nil {
		t.Errorf("after berth diff uninstall: %v", err)
	}
}

func TestDiffRollback(t *testing.T) {
	env := testenv.New(t)
	ch := diffChart(t)
	if _, err := berthIn(t, env, "install", "dock", ch); err != nil {
		t.Fatalf("berth install: %v", err)
	}
	if _, err := berthIn(t, env, "upgrade", "dock", ch, "--set", "mode=slow"); err != nil {
		t.Fatalf("berth upgrade: %v", err)
	}
	r, err := berthDiff(t, env, "rollback", "dock")
	if err != nil {
		t.Fatalf("berth diff rollback: %v", err)
	}
	cm := resource.Identity{Kind: "ConfigMap", Namespace: env.Namespace, Name: "settings"}
	if got := objectsWith(r, plan.Configured); !cmp.Equal(got, []resource.Identity{cm}) {
		t.Fatalf("changed objects = %v, want only %s", got, cm)
	}
	want := []string{`-  mode: slow`, `+  mode: fast`}
	if got := changedLines(r.Objects[slices.IndexFunc(r.Objects, func(o diff.Object) bool { return o.Identity == cm })].Diff); !cmp.Equal(got, want) {
		t.Errorf("diff of %s changes %q, want %q", cm, got, want)
	}
	if r.Record.Revision != 3 || !slices.Equal(r.Record.Superseded, []int{2}) {
		t.Errorf("record = %+v, want revision 3 with revision 2 superseded", r.Record)
	}
}

// TestDiffUnservedKind previews a chart whose CRD defines the kind of one of its objects: the
// CRD is dry-run, the object, whose kind is not served yet, is shown as rendered.
func TestDiffUnservedKind(t *testing.T) {
	env := testenv.New(t)
	group := strings.ReplaceAll(env.Namespace, "-", "") + ".example.com"
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.` + group + `}
spec:
  group: ` + group + `
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`
	ch := writeChart(t, "gadgets", map[string]string{
		"crds/gadget.yaml":      crd,
		"templates/gadget.yaml": "apiVersion: " + group + "/v1\nkind: Gadget\nmetadata: {name: g}\nspec: {size: 3}\n",
	})
	r, err := berthDiff(t, env, "install", "gadgets", ch)
	if err != nil {
		t.Fatalf("berth diff install: %v", err)
	}
	byKind := map[string]diff.Object{}
	for _, o := range r.Objects {
		byKind[o.Kind] = o
	}
	if o := byKind["CustomResourceDefinition"]; o.Change != plan.Created || o.NotDryRun {
		t.Errorf("CRD: %+v, want created and dry-run", o)
	}
	o := byKind["Gadget"]
	if o.Change != plan.Created || !o.NotDryRun || !strings.Contains(o.Diff, "+  size: 3") {
		t.Errorf("Gadget: %+v, want created as rendered, not dry-run", o)
	}
	out, err := berthIn(t, env, "diff", "install", "gadgets", ch)
	if err != nil || !strings.Contains(out, "not dry-run") {
		t.Errorf("berth diff install does not say the Gadget was not dry-run (%v):\n%s", err, out)
	}
}

// TestDiffAdoptFromHelm previews berth's first upgrade of a release Helm installed with
// client-side apply (as Helm 3 does); one Helm v4 installed with its default server-side apply
// has nothing to adopt, since berth applies under the same field manager.
func TestDiffAdoptFromHelm(t *testing.T) {
	ch := diffChart(t)
	ssa := testenv.New(t)
	if _, err := helmIn(t, ssa, "install", "dock", ch); err != nil {
		t.Fatal(err)
	}
	if r, err := berthDiff(t, ssa, "upgrade", "dock", ch); err != nil {
		t.Errorf("berth diff upgrade of a release helm applied server-side: %v", err)
	} else if r.Summary.Adopted != 0 {
		t.Errorf("berth diff upgrade of a release helm applied server-side: %+v, want nothing adopted", r.Summary)
	}

	env := testenv.New(t)
	if _, err := helmIn(t, env, "install", "dock", ch, "--server-side=false"); err != nil {
		t.Fatal(err)
	}
	r, err := berthDiff(t, env, "upgrade", "dock", ch, "--set", "mode=slow")
	if err != nil {
		t.Fatalf("berth diff upgrade: %v", err)
	}
	if r.Summary.Adopted != 3 || r.Summary.Configured != 1 {
		t.Errorf("summary = %+v, want 3 adopted from Helm, 1 configured", r.Summary)
	}
	out, err := berthIn(t, env, "diff", "upgrade", "dock", ch, "--color", "always")
	if err != nil {
		t.Fatalf("berth diff upgrade: %v", err)
	}
	if !strings.Contains(out, "Adopted (fields applied client-side") || !strings.Contains(out, "\x1b[") {
		t.Errorf("berth diff upgrade --color always printed no colours or no adoption:\n%s", out)
	}
}

func TestDiffBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{args: []string{"diff", "upgrade", "web", "./chart", "-o", "yaml"}, want: "--output"},
		{args: []string{"diff", "rollback", "web", "--context", "-1"}, want: "--context"},
		{args: []string{"diff", "uninstall", "web", "--dry-run"}, want: "--dry-run"},
		// The operations' own setup refuses these before the cluster is contacted.
		{args: []string{"diff", "install", "web", "./chart", "--crds", "create", "--skip-crds"}, want: "contradict each other"},
		{args: []string{"diff", "upgrade", "web", "./chart", "--reuse-values", "--reset-values"}, want: "exclude each other"},
		{args: []string{"diff", "rollback", "web", "x"}, want: "invalid revision"},
		{args: []string{"diff", "rollback", "web", "--description", strings.Repeat("d", 600)}, want: "description must be"},
		{args: []string{"diff", "uninstall", "web", "--cascade", "sideways"}, want: "--cascade"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, err := run(t, append(tt.args, "--kubeconfig", "/nonexistent")...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("berth %s: %v, want an error about %s", strings.Join(tt.args, " "), err, tt.want)
			}
		})
	}
}

// TestDiffUpgradeDeletesAndKeeps previews an upgrade whose chart drops two objects: one is
// deleted, the other kept by its resource policy.
func TestDiffUpgradeDeletesAndKeeps(t *testing.T) {
	env := testenv.New(t)
	files := map[string]string{
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n",
		"templates/old.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: old}\ndata: {a: b}\n",
		"templates/keep.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: keep, annotations: {helm.sh/resource-policy: keep}}\ndata: {k: dg==}\n",
	}
	if _, err := berthIn(t, env, "install", "dock", writeChart(t, "dock", files)); err != nil {
		t.Fatalf("berth install: %v", err)
	}
	delete(files, "templates/old.yaml")
	delete(files, "templates/keep.yaml")
	r, err := berthDiff(t, env, "upgrade", "dock", writeChart(t, "dock", files))
	if err != nil {
		t.Fatalf("berth diff upgrade: %v", err)
	}
	old := resource.Identity{Kind: "ConfigMap", Namespace: env.Namespace, Name: "old"}
	keep := resource.Identity{Kind: "Secret", Namespace: env.Namespace, Name: "keep"}
	if got := objectsWith(r, plan.Deleted); !cmp.Equal(got, []resource.Identity{old}) {
		t.Errorf("deleted = %v, want %s", got, old)
	}
	if got := objectsWith(r, plan.Kept); !cmp.Equal(got, []resource.Identity{keep}) {
		t.Errorf("kept = %v, want %s", got, keep)
	}
	i := slices.IndexFunc(r.Objects, func(o diff.Object) bool { return o.Identity == old })
	if want := "-  a: b"; i < 0 || !slices.Contains(changedLines(r.Objects[i].Diff), want) {
		t.Errorf("diff of the deleted %s does not remove %q", old, want)
	}
}

// TestDiffUninstallBlocked previews an uninstall that a webhook would block: the preview is
// printed, and the exit code says blocked, as uninstall's own.
func TestDiffUninstallBlocked(t *testing.T) {
	env := testenv.New(t)
	if _, err := berthIn(t, env, "install", "dock", diffChart(t)); err != nil {
		t.Fatalf("berth install: %v", err)
	}
	wh := testenv.StartWebhook(t, testenv.Deny("configmaps are pinned"))
	env.RegisterValidatingWebhook(t, wh, testenv.WebhookOptions{
		Name: "pin.configmaps.berth.dev",
		Rules: []admissionregistrationv1.RuleWithOperations{testenv.Rule(
			[]admissionregistrationv1.OperationType{admissionregistrationv1.Delete}, []string{""}, []string{"v1"}, []string{"configmaps"})},
	})
	r, err := berthDiff(t, env, "uninstall", "dock")
	if ExitCode(err) != ExitBlocked {
		t.Fatalf("berth diff uninstall: exit code %d (%v), want %d", ExitCode(err), err, ExitBlocked)
	}
	if err == nil || !strings.Contains(err.Error(), "pin.configmaps.berth.dev") {
		t.Errorf("berth diff uninstall does not name the webhook: %v", err)
	}
	if r == nil || r.Summary.Deleted != 3 {
		t.Fatalf("berth diff uninstall printed %+v, want the 3 deletions", r)
	}
}

// TestDiffTakesTheOperationsFlags: each berth diff subcommand has the flags of the operation it
// previews, with the same defaults and help, but those of what the operation prints.
func TestDiffTakesTheOperationsFlags(t *testing.T) {
	t.Parallel()
	root := newRootCommand(Streams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}, newSettings(func(string) string { return "" }))
	printing := []string{"dry-run", "output", "hide-secret", "hide-notes", "generate-name", "name-template"}
	for _, op := range []string{"install", "upgrade", "rollback", "uninstall"} {
		opCmd, _, err := root.Find([]string{op})
		if err != nil {
			t.Fatalf("berth %s: %v", op, err)
		}
		diffCmd, _, err := root.Find([]string{"diff", op})
		if err != nil {
			t.Fatalf("berth diff %s: %v", op, err)
		}
		want, got := flagsOf(opCmd, printing), flagsOf(diffCmd, nil)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("berth diff %s's flags differ from berth %s's (-%s +diff):\n%s", op, op, op, d)
		}
	}
}

// flagsOf describes cmd's own flags (name, shorthand, default and usage) but those left out.
func flagsOf(cmd *cobra.Command, leftOut []string) []string {
	var out []string
	cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		if !slices.Contains(leftOut, f.Name) {
			out = append(out, fmt.Sprintf("--%s -%s [%s] %s (%s)", f.Name, f.Shorthand, f.DefValue, f.Usage, f.Deprecated))
		}
	})
	return out
}
