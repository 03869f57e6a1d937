package crash

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// largeBlobs is how many files of random text the large chart has, each also the data of one of
// its ConfigMaps; largeBlobSize is the size of each.
const (
	largeBlobs    = 3
	largeBlobSize = 700 << 10
)

// largeChart writes a chart whose record takes about 3 MiB, compressed: three files of random
// text (seeded, so every run writes the same chart), each also the data of a ConfigMap of its
// manifest. Its templates, files and manifest do not fit in one object: they go to the record's
// parts (four, of at most 1 MiB each), and its record object keeps the rest. A small ConfigMap
// says the version value (1 or 2).
func largeChart(t testing.TB) string {
	t.Helper()
	rnd := rand.New(rand.NewPCG(35, 1))
	files := map[string]string{
		"values.yaml": "version: 1\n",
		"templates/version.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-version}
data: {version: {{ .Values.version | quote }}}
`,
	}
	raw := make([]byte, 57)
	for i := range largeBlobs {
		var b strings.Builder
		for b.Len() < largeBlobSize {
			for j := range raw {
				raw[j] = byte(rnd.Uint32())
			}
			b.WriteString(base64.StdEncoding.EncodeToString(raw))
			b.WriteByte('\n')
		}
		files[fmt.Sprintf("files/blob-%d.txt", i)] = b.String()
		files[fmt.Sprintf("templates/blob-%d.yaml", i)] = fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}-blob-%d}
data:
  blob: |-
{{ .Files.Get "files/blob-%d.txt" | trim | indent 4 }}
`, i, i)
	}
	return berthtest.WriteChart(t, "large", files)
}

// recordObjects are the Secrets that hold the records of release name, by revision.
func recordObjects(ctx context.Context, t testing.TB, env *testenv.Env, name string) map[int]corev1.Secret {
	t.Helper()
	list, err := env.Client.CoreV1().Secrets(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	if err != nil {
		t.Fatalf("list the records of %s: %v", name, err)
	}
	out := map[int]corev1.Secret{}
	for _, s := range list.Items {
		v, _ := strconv.Atoi(s.Labels["version"])
		out[v] = s
	}
	return out
}

// partObjects are the Secrets that hold parts of the records of release name.
func partObjects(ctx context.Context, t testing.TB, env *testenv.Env, name string) []corev1.Secret {
	t.Helper()
	list, err := env.Client.CoreV1().Secrets(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=berth,name=" + name + "," + release.PartSetLabel})
	if err != nil {
		t.Fatalf("list the record parts of %s: %v", name, err)
	}
	return list.Items
}

// partsNamed are the names of the parts the record object rec names (its PartsAnnotation).
func partsNamed(t testing.TB, rec corev1.Secret) []string {
	t.Helper()
	ann := rec.Annotations[release.PartsAnnotation]
	if ann == "" {
		return nil
	}
	c, sum, _ := strings.Cut(ann, "/")
	count, err := strconv.Atoi(c)
	if err != nil || len(sum) < 10 {
		t.Fatalf("record %s: %s %q", rec.Name, release.PartsAnnotation, ann)
	}
	var out []string
	for i := range count {
		out = append(out, fmt.Sprintf("%s.%s.%d", rec.Name, sum[:10], i))
	}
	return out
}

// largeState checks that release name is consistent: no lease, no journal, its revisions
// exactly versions (none when versions is empty), the newest deployed with the version value
// version and its recorded manifest manifest, byte for byte; every part each record object
// names present, and no other part. Problems are returned.
func largeState(ctx context.Context, t testing.TB, env *testenv.Env, name string, versions []int, version, manifest string) []string {
	t.Helper()
	var problems []string
	if _, err := env.Client.CoordinationV1().Leases(env.Namespace).Get(ctx, release.LeaseKey(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		problems = append(problems, fmt.Sprintf("lease %s left (%v)", release.LeaseKey(name), err))
	}
	if _, err := env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, release.JournalKey(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		problems = append(problems, fmt.Sprintf("journal %s left (%v)", release.JournalKey(name), err))
	}
	records := recordObjects(ctx, t, env, name)
	var recorded []int
	wantParts := map[string]bool{}
	for v, rec := range records {
		recorded = append(recorded, v)
		for _, p := range partsNamed(t, rec) {
			wantParts[p] = true
		}
	}
	slices.Sort(recorded)
	if !slices.Equal(recorded, versions) {
		problems = append(problems, fmt.Sprintf("record objects of revisions %v, want %v", recorded, versions))
	}
	for _, p := range partObjects(ctx, t, env, name) {
		if !wantParts[p.Name] {
			problems = append(problems, fmt.Sprintf("part %s (revision %s) left, named by no record", p.Name, p.Labels["version"]))
		}
		delete(wantParts, p.Name)
	}
	for p := range wantParts {
		problems = append(problems, fmt.Sprintf("part %s missing", p))
	}
	history, err := release.NewSecretStore(env.Client.CoreV1(), env.Namespace).History(ctx, name)
	if len(versions) == 0 {
		if err == nil {
			problems = append(problems, fmt.Sprintf("history of %d revisions, want none", len(history)))
		}
		return problems
	}
	if err != nil {
		return append(problems, fmt.Sprintf("history: %v", err))
	}
	var read []int
	for _, rel := range history {
		read = append(read, rel.Version)
	}
	if !slices.Equal(read, versions) {
		problems = append(problems, fmt.Sprintf("history reads revisions %v, want %v", read, versions))
	}
	last := history[len(history)-1]
	if last.Info.Status != release.StatusDeployed {
		problems = append(problems, fmt.Sprintf("newest revision %d is %s, want deployed", last.Version, last.Info.Status))
	}
	if got := fmt.Sprint(last.Config["version"]); got != version && !(got == "<nil>" && version == "1") {
		problems = append(problems, fmt.Sprintf("newest revision %d has version %s, want %s", last.Version, got, version))
	}
	if last.Manifest != manifest {
		problems = append(problems, fmt.Sprintf("newest revision %d: its manifest (%d bytes) is not the one rendered (%d bytes)", last.Version, len(last.Manifest), len(manifest)))
	}
	if len(last.Chart.Files) != largeBlobs {
		problems = append(problems, fmt.Sprintf("newest revision %d: %d chart files read back, want %d", last.Version, len(last.Chart.Files), largeBlobs))
	}
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(ctx, name+"-version", metav1.GetOptions{})
	if err != nil || cm.Data["version"] != version {
		problems = append(problems, fmt.Sprintf("ConfigMap %s-version: %v (%v), want version %s", name, cm.Data, err, version))
	}
	return problems
}

// renderedManifest is the manifest berth records for release name of chart with args (--set
// version=2): as berth template prints it, which ends it with one newline less.
func renderedManifest(t testing.TB, env *testenv.Env, name, chart string, args ...string) string {
	t.Helper()
	return mustBerth(t, env, append([]string{"template", name, chart}, args...)...) + "\n"
}

// incompleteUpgrade leaves release name, installed from the large chart, as an upgrade to
// version 2 killed while it wrote its record's parts leaves it: revision 2's record object and
// all its parts but the last, and no journal (an operation writes its journal once its record
// is written).
func incompleteUpgrade(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	store := release.NewSecretStore(env.Client.CoreV1(), env.Namespace)
	rel, err := store.Get(t.Context(), name, 1)
	if err != nil {
		t.Fatal(err)
	}
	rel.Version = 2
	rel.Config = map[string]any{"version": 2}
	rel.Info.Status, rel.Info.Description = release.StatusPendingUpgrade, "Preparing upgrade"
	incompleteRecord(t, env, store, rel)
}

// incompleteRecord records rel and deletes the last of its parts.
func incompleteRecord(t *testing.T, env *testenv.Env, store *release.HelmStore, rel *release.Release) {
	t.Helper()
	if err := store.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	rec := recordObjects(t.Context(), t, env, rel.Name)[rel.Version]
	parts := partsNamed(t, rec)
	if len(parts) < 2 {
		t.Fatalf("revision %d of %s has %d parts, want at least 2", rel.Version, rel.Name, len(parts))
	}
	if err := env.Client.CoreV1().Secrets(env.Namespace).Delete(t.Context(), parts[len(parts)-1], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := store.Get(t.Context(), rel.Name, rel.Version)
	if incomplete := new(release.IncompleteRecordError); !errors.As(err, &incomplete) {
		t.Fatalf("revision %d of %s with its last part deleted: %v, want an incomplete record", rel.Version, rel.Name, err)
	}
}

// TestLargeIncompleteRecordConverges leaves, for each follow-up, the state of an upgrade killed
// while it wrote its record's parts: the record is never read as a revision (berth history does
// not show it, berth status says what recovering does), and berth recover, berth recover
// --rollback and the upgrade run again each converge: the incomplete record and its parts are
// deleted (recover) or replaced (the upgrade), and no part is left that no record names.
func TestLargeIncompleteRecordConverges(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := largeChart(t)
	for _, how := range followUps {
		name := "inc-" + strings.ReplaceAll(how, " --", "-")
		mustBerth(t, env, "install", name, chart)
		v1 := renderedManifest(t, env, name, chart)
		if problems := largeState(t.Context(), t, env, name, []int{1}, "1", v1); len(problems) > 0 {
			t.Fatalf("%s after its install: %v", name, problems)
		}
		incompleteUpgrade(t, env, name)
		if out := mustBerth(t, env, "history", name); strings.Contains(out, "pending-upgrade") || !strings.Contains(out, "deployed") {
			t.Errorf("berth history of %s with an incomplete revision 2:\n%s\nwant revision 1 alone", name, out)
		}
		if out := mustBerth(t, env, "status", name); !strings.Contains(out, "incomplete") {
			t.Errorf("berth status of %s with an incomplete revision 2 does not say so:\n%s", name, out)
		}
		// Helm reads the record object alone: to helm, revision 2 is an upgrade under way.
		if out := berthtest.MustHelm(t, env, "history", name); !strings.Contains(out, "pending-upgrade") {
			t.Errorf("helm history of %s with an incomplete revision 2:\n%s\nwant it pending-upgrade", name, out)
		}
		var args []string
		versions, version, manifest := []int{1}, "1", v1
		switch how {
		case "recover":
			args = []string{"recover", name}
		case "recover --rollback":
			args = []string{"recover", name, "--rollback"}
		default:
			args = []string{"upgrade", name, chart, "--set", "version=2"}
			versions, version, manifest = []int{1, 2}, "2", renderedManifest(t, env, name, chart, "--set", "version=2")
		}
		out := mustBerth(t, env, args...)
		if problems := largeState(t.Context(), t, env, name, versions, version, manifest); len(problems) > 0 {
			t.Errorf("berth %s after an incomplete revision 2: not converged:\n  %s\n%s", strings.Join(args, " "), strings.Join(problems, "\n  "), out)
		}
		if out := berthtest.MustHelm(t, env, "history", name); strings.Contains(out, "pending") {
			t.Errorf("helm history of %s after berth %s:\n%s\nwant nothing pending", name, strings.Join(args, " "), out)
		}
	}
}

// TestLargeIncompleteInstallConverges leaves the state of an install killed while it wrote its
// record's parts, the release's only record: berth recover (and --rollback) delete it and its
// parts, leaving nothing; an install run again replaces it.
func TestLargeIncompleteInstallConverges(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := largeChart(t)
	mustBerth(t, env, "install", "source", chart)
	store := release.NewSecretStore(env.Client.CoreV1(), env.Namespace)
	for _, how := range []string{"recover", "recover --rollback", "install"} {
		name := "inc-" + strings.ReplaceAll(how, " --", "-")
		rel, err := store.Get(t.Context(), "source", 1)
		if err != nil {
			t.Fatal(err)
		}
		rel.Name = name
		rel.Info.Status, rel.Info.Description = release.StatusPendingInstall, "Initial install underway"
		incompleteRecord(t, env, store, rel)
		if r := berth(t, env, nil, "history", name); r.err == nil {
			t.Errorf("berth history of %s, whose only record is incomplete, succeeded:\n%s", name, r.out)
		}
		args := []string{"recover", name}
		var versions []int
		var manifest string
		switch how {
		case "recover --rollback":
			args = append(args, "--rollback")
		case "install":
			args = []string{"install", name, chart}
			versions, manifest = []int{1}, renderedManifest(t, env, name, chart)
		}
		out := mustBerth(t, env, args...)
		if problems := largeState(t.Context(), t, env, name, versions, "1", manifest); len(problems) > 0 {
			t.Errorf("berth %s after an incomplete install: not converged:\n  %s\n%s", strings.Join(args, " "), strings.Join(problems, "\n  "), out)
		}
		if how != "install" && !strings.Contains(out, "has no revision") {
			t.Errorf("berth %s after an incomplete install does not say that no revision is left:\n%s", strings.Join(args, " "), out)
		}
	}
}

// killWhileRecording starts berth with args and kills it (SIGKILL) as soon as the first part of
// the record of revision version of release name is created: while it writes that record's
// parts, after its object. It reports whether the kill left the record incomplete (its object
// there, not all its parts).
func killWhileRecording(t *testing.T, env *testenv.Env, name string, version int, args ...string) (run, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	secrets := env.Client.CoreV1().Secrets(env.Namespace)
	sel := metav1.ListOptions{LabelSelector: "owner=berth,name=" + name + ",version=" + strconv.Itoa(version) + "," + release.PartSetLabel}
	list, err := secrets.List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	sel.ResourceVersion = list.ResourceVersion
	w, err := secrets.Watch(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	p := berthProcess(t, env, nil, args...)
	func() {
		for {
			select {
			case e, ok := <-w.ResultChan():
				if !ok {
					return
				}
				if e.Type == watch.Added {
					p.kill()
					return
				}
			case <-p.done:
				return
			}
		}
	}()
	r := p.wait()
	rec, ok := recordObjects(ctx, t, env, name)[version]
	if !ok || !r.killed {
		return r, false
	}
	present := map[string]bool{}
	for _, part := range partObjects(ctx, t, env, name) {
		present[part.Name] = true
	}
	named := partsNamed(t, rec)
	missing := 0
	for _, p := range named {
		if !present[p] {
			missing++
		}
	}
	t.Logf("berth %s killed with revision %d's record object written and %d of its %d parts", strings.Join(args, " "), version, len(named)-missing, len(named))
	return r, missing > 0
}

// TestLargeRecordKilledWhileWritingParts kills berth, installing and then upgrading a release
// whose record takes about 3 MiB, while it writes the record's parts: the incomplete revision is
// not in berth history; berth recover deletes it (the release stays as it was, every part of
// its records there, none other), and the operation run again records the revision whole, with
// the manifest rendered, byte for byte. A kill that misses the parts (the process wrote them
// all first) is tried again, on another release, up to five times.
func TestLargeRecordKilledWhileWritingParts(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := largeChart(t)
	hit := false
	for i := 0; i < 5 && !hit; i++ {
		name := fmt.Sprintf("killed-install-%d", i)
		r, incomplete := killWhileRecording(t, env, name, 1, "install", name, chart)
		if !incomplete {
			t.Logf("attempt %d: the install was not killed while writing its record's parts (killed: %v, %v)\n%s", i, r.killed, r.err, r.out)
			mustBerth(t, env, "recover", name, "--rollback")
			continue
		}
		hit = true
		if r := berth(t, env, nil, "history", name); r.err == nil {
			t.Errorf("berth history of %s, whose only record is incomplete, succeeded:\n%s", name, r.out)
		}
		out := mustBerth(t, env, "recover", name)
		if problems := largeState(t.Context(), t, env, name, nil, "", ""); len(problems) > 0 {
			t.Errorf("berth recover after the install was killed while writing its record: not converged:\n  %s\n%s", strings.Join(problems, "\n  "), out)
		}
		out = mustBerth(t, env, "install", name, chart)
		if problems := largeState(t.Context(), t, env, name, []int{1}, "1", renderedManifest(t, env, name, chart)); len(problems) > 0 {
			t.Errorf("berth install after the recovery: not converged:\n  %s\n%s", strings.Join(problems, "\n  "), out)
		}
	}
	if !hit {
		t.Error("no install of five was killed while writing its record's parts")
	}

	hit = false
	for i := 0; i < 5 && !hit; i++ {
		name := fmt.Sprintf("killed-upgrade-%d", i)
		mustBerth(t, env, "install", name, chart)
		upgrade := []string{"upgrade", name, chart, "--set", "version=2"}
		r, incomplete := killWhileRecording(t, env, name, 2, upgrade...)
		if !incomplete {
			t.Logf("attempt %d: the upgrade was not killed while writing its record's parts (killed: %v, %v)\n%s", i, r.killed, r.err, r.out)
			continue
		}
		hit = true
		if out := mustBerth(t, env, "history", name); strings.Contains(out, "pending-upgrade") {
			t.Errorf("berth history of %s shows the incomplete revision 2:\n%s", name, out)
		}
		out := mustBerth(t, env, "recover", name)
		if problems := largeState(t.Context(), t, env, name, []int{1}, "1", renderedManifest(t, env, name, chart)); len(problems) > 0 {
			t.Errorf("berth recover after the upgrade was killed while writing its record: not converged:\n  %s\n%s", strings.Join(problems, "\n  "), out)
		}
		out = mustBerth(t, env, upgrade...)
		if problems := largeState(t.Context(), t, env, name, []int{1, 2}, "2", renderedManifest(t, env, name, chart, "--set", "version=2")); len(problems) > 0 {
			t.Errorf("berth upgrade after the recovery: not converged:\n  %s\n%s", strings.Join(problems, "\n  "), out)
		}
	}
	if !hit {
		t.Error("no upgrade of five was killed while writing its record's parts")
	}
}

// waitNoParts waits until no part of the records of revision version of release name is left.
func waitNoParts(ctx context.Context, t *testing.T, env *testenv.Env, name string, version int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	secrets := env.Client.CoreV1().Secrets(env.Namespace)
	sel := metav1.ListOptions{LabelSelector: "owner=berth,name=" + name + ",version=" + strconv.Itoa(version) + "," + release.PartSetLabel}
	list, err := secrets.List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]bool{}
	for _, s := range list.Items {
		left[s.Name] = true
	}
	if len(left) == 0 {
		return
	}
	sel.ResourceVersion = list.ResourceVersion
	w, err := secrets.Watch(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for e := range w.ResultChan() {
		s, ok := e.Object.(*corev1.Secret)
		switch {
		case !ok:
			continue
		case e.Type == watch.Deleted:
			delete(left, s.Name)
		default:
			left[s.Name] = true
		}
		if len(left) == 0 {
			return
		}
	}
	t.Fatalf("parts of revision %d of %s still there: %v", version, name, left)
}

// TestLargeRecordPartsGoWithTheirRecord: pruning the history (--history-max) deletes the parts of
// the revisions it deletes, and a record object deleted by anyone else (as helm's own history
// pruning and helm uninstall delete it) takes its parts with it, by the garbage collector: none
// is left that no record names.
func TestLargeRecordPartsGoWithTheirRecord(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := largeChart(t)
	const name = "pruned"
	mustBerth(t, env, "install", name, chart)
	mustBerth(t, env, "upgrade", name, chart, "--set", "version=2")
	out := mustBerth(t, env, "upgrade", name, chart, "--set", "version=3", "--history-max", "2")
	v3 := renderedManifest(t, env, name, chart, "--set", "version=3")
	if problems := largeState(t.Context(), t, env, name, []int{2, 3}, "3", v3); len(problems) > 0 {
		t.Errorf("after an upgrade with --history-max 2:\n  %s\n%s", strings.Join(problems, "\n  "), out)
	}

	// Revision 2's record object deleted by someone else: its parts go with it.
	if err := env.Client.CoreV1().Secrets(env.Namespace).Delete(t.Context(), release.Key(name, 2), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNoParts(t.Context(), t, env, name, 2)
	if problems := largeState(t.Context(), t, env, name, []int{3}, "3", v3); len(problems) > 0 {
		t.Errorf("after revision 2's record object was deleted:\n  %s", strings.Join(problems, "\n  "))
	}

	out = mustBerth(t, env, "uninstall", name)
	if problems := largeState(t.Context(), t, env, name, nil, "", ""); len(problems) > 0 {
		t.Errorf("after berth uninstall:\n  %s\n%s", strings.Join(problems, "\n  "), out)
	}
}

// strayParts copies the parts of revision version of release name under another part set, owned
// by its record object, as an update of that record whose parts changed leaves the new parts
// (stopped before it wrote the object) or the old ones (stopped before it deleted them).
func strayParts(t *testing.T, env *testenv.Env, name string, version int) {
	t.Helper()
	secrets := env.Client.CoreV1().Secrets(env.Namespace)
	other := strings.Repeat("e", 16)
	for _, p := range partObjects(t.Context(), t, env, name) {
		if p.Labels["version"] != strconv.Itoa(version) {
			continue
		}
		i := p.Name[strings.LastIndex(p.Name, ".")+1:]
		labels := map[string]string{}
		for k, v := range p.Labels {
			labels[k] = v
		}
		labels[release.PartSetLabel] = other
		stray := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: release.Key(name, version) + "." + other[:10] + "." + i, Labels: labels,
			OwnerReferences: p.OwnerReferences}, Type: p.Type, Data: p.Data}
		if _, err := secrets.Create(t.Context(), stray, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLargeRecordUpdateStoppedMidwayLeavesNoParts leaves beside the deployed revision of an
// upgrade the parts an update of its record stopped midway leaves (a record whose parts change
// as its status does): the release reads as it was recorded. With the upgrade's journal left (it
// was killed within its last step), berth recover deletes them; without (killed at its very
// end, the journal deleted), they go with their record: berth uninstall leaves none.
func TestLargeRecordUpdateStoppedMidwayLeavesNoParts(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := largeChart(t)
	for _, journal := range []bool{true, false} {
		name := "stray-" + strconv.FormatBool(journal)
		mustBerth(t, env, "install", name, chart)
		mustBerth(t, env, "upgrade", name, chart, "--set", "version=2")
		v2 := renderedManifest(t, env, name, chart, "--set", "version=2")
		strayParts(t, env, name, 2)
		if journal {
			j := &release.Journal{Release: name, Operation: release.OpUpgrade, Revision: 2, State: release.JournalRunning,
				Started: time.Now(), Updated: time.Now()}
			if _, err := release.NewJournals(env.Client.CoreV1(), env.Namespace).Put(t.Context(), j, ""); err != nil {
				t.Fatal(err)
			}
		}
		if out := mustBerth(t, env, "get", "manifest", name); out != v2+"\n" {
			t.Errorf("berth get manifest %s with stray parts: %d bytes, want the %d recorded", name, len(out), len(v2))
		}
		if !journal {
			out := mustBerth(t, env, "uninstall", name)
			waitNoParts(t.Context(), t, env, name, 2)
			if problems := largeState(t.Context(), t, env, name, nil, "", ""); len(problems) > 0 {
				t.Errorf("berth uninstall of a release with stray parts:\n  %s\n%s", strings.Join(problems, "\n  "), out)
			}
			continue
		}
		out := mustBerth(t, env, "recover", name)
		if problems := largeState(t.Context(), t, env, name, []int{1, 2}, "2", v2); len(problems) > 0 {
			t.Errorf("berth recover with the upgrade's journal and stray parts left:\n  %s\n%s", strings.Join(problems, "\n  "), out)
		}
	}
}
