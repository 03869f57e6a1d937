package lifecycle

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// The tests of this file take releases whose records are larger than a Secret holds through
// berth and through Helm v4's own binary, and show what each of helm's commands does with them.

// recordObject returns the Secret that records revision version of release name.
func recordObject(t *testing.T, env *testenv.Env, name string, version int) *corev1.Secret {
	t.Helper()
	s, err := env.Client.CoreV1().Secrets(env.Namespace).Get(t.Context(), release.Key(name, version), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the record of release %s revision %d: %v", name, version, err)
	}
	return s
}

// partSecrets returns the Secrets of the test's namespace that hold parts of records, of any
// release.
func partSecrets(t *testing.T, env *testenv.Env) []corev1.Secret {
	t.Helper()
	list, err := env.Client.CoreV1().Secrets(env.Namespace).List(t.Context(), metav1.ListOptions{FieldSelector: "type=" + release.PartSecretType})
	if err != nil {
		t.Fatalf("list Secrets of type %s: %v", release.PartSecretType, err)
	}
	return list.Items
}

// recordVersions returns the revisions of release name that have a record Secret, in order.
func recordVersions(t *testing.T, env *testenv.Env, name string) []int {
	t.Helper()
	list, err := env.Client.CoreV1().Secrets(env.Namespace).List(t.Context(), metav1.ListOptions{
		FieldSelector: "type=helm.sh/release.v1", LabelSelector: "owner=helm,name=" + name})
	if err != nil {
		t.Fatalf("list the records of release %s: %v", name, err)
	}
	var out []int
	for _, s := range list.Items {
		v, err := strconv.Atoi(s.Labels["version"])
		if err != nil {
			t.Fatalf("record %s: version label %q", s.Name, s.Labels["version"])
		}
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// split is what a split record's Secrets hold.
type split struct {
	// object is the size of the record Secret's data; parts the sizes of its parts'.
	object int
	parts  []int
	// manifest is the manifest the record Secret holds, as helm reads it.
	manifest string
}

// total is the size of the whole record, its object and parts.
func (s split) total() int {
	n := s.object
	for _, p := range s.parts {
		n += p
	}
	return n
}

// assertSplit checks that revision version of release name is recorded in a Secret that fits
// (data within release.MaxObjectData) and parts that each fit, owned by it, as many as its
// annotation says.
func assertSplit(t *testing.T, env *testenv.Env, name string, version int) split {
	t.Helper()
	rec := recordObject(t, env, name, version)
	ann := rec.Annotations[release.PartsAnnotation]
	count, _, ok := strings.Cut(ann, "/")
	if !ok {
		t.Fatalf("record %s has annotation %s %q, want COUNT/SHA256: the record is not split", rec.Name, release.PartsAnnotation, ann)
	}
	s := split{object: len(rec.Data["release"]), manifest: recordedManifest(t, rec)}
	if s.object > release.MaxObjectData {
		t.Errorf("record %s holds %d bytes, more than a Secret holds (%d)", rec.Name, s.object, release.MaxObjectData)
	}
	for _, p := range partSecrets(t, env) {
		if p.Labels["name"] != name || p.Labels["version"] != strconv.Itoa(version) {
			continue
		}
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != rec.UID || p.OwnerReferences[0].Kind != "Secret" {
			t.Errorf("part %s has owners %+v, want the record Secret %s (UID %s)", p.Name, p.OwnerReferences, rec.Name, rec.UID)
		}
		if n := len(p.Data["part"]); n > release.MaxObjectData {
			t.Errorf("part %s holds %d bytes, more than a Secret holds", p.Name, n)
		}
		s.parts = append(s.parts, len(p.Data["part"]))
	}
	if strconv.Itoa(len(s.parts)) != count {
		t.Errorf("record %s says %s parts; %d exist", rec.Name, count, len(s.parts))
	}
	t.Logf("release %s revision %d: record Secret %d bytes, %d parts of %v bytes, %s in all",
		name, version, s.object, len(s.parts), s.parts, release.Bytes(s.total()))
	return s
}

// decodedRecord is the JSON of a record Secret's data, as Helm's driver decodes it: base64,
// then gzip.
func decodedRecord(t *testing.T, rec *corev1.Secret) []byte {
	t.Helper()
	z, err := base64.StdEncoding.DecodeString(string(rec.Data["release"]))
	if err != nil {
		t.Fatalf("record %s: %v", rec.Name, err)
	}
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatalf("record %s: %v", rec.Name, err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("record %s: %v", rec.Name, err)
	}
	return b
}

// recordedManifest is the manifest a record Secret holds, without its parts.
func recordedManifest(t *testing.T, rec *corev1.Secret) string {
	t.Helper()
	var r struct{ Manifest string }
	if err := json.Unmarshal(decodedRecord(t, rec), &r); err != nil {
		t.Fatalf("record %s: %v", rec.Name, err)
	}
	return r.Manifest
}

// waitNoParts waits until no Secret of the test's namespace holds a part of a record: parts
// whose record helm deleted go with the garbage collector.
func waitNoParts(t *testing.T, env *testenv.Env) {
	t.Helper()
	poll(t, "no parts of records are left", func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Secrets(env.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "type=" + release.PartSecretType})
		return err == nil && len(list.Items) == 0, err
	})
}

// assertNoParts checks that no Secret of the test's namespace holds a part of a record.
func assertNoParts(t *testing.T, env *testenv.Env) {
	t.Helper()
	for _, p := range partSecrets(t, env) {
		t.Errorf("part %s (release %s revision %s) is left", p.Name, p.Labels["name"], p.Labels["version"])
	}
}

// configMessage returns the message of the live ConfigMap name.
func configMessage(t *testing.T, env *testenv.Env, name string) string {
	t.Helper()
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get ConfigMap %s: %v", name, err)
	}
	return cm.Data["message"]
}

// helmList is the releases helm list -o json prints: name, revision and status.
func helmList(t *testing.T, env *testenv.Env) []struct{ Name, Revision, Status string } {
	t.Helper()
	var list []struct{ Name, Revision, Status string }
	out := berthtest.MustHelm(t, env, "list", "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("parse helm list: %v\n%s", err, out)
	}
	return list
}

// TestLargeRecordLifecycle takes a release whose record is about 3 MiB (its chart's files and
// CRDs; its manifest is small and stays in the record Secret) through berth and helm: helm reads
// everything it shows of the release, rolls it back and uninstalls it, and berth reads the
// revisions helm writes. Each step leaves nothing behind that it should not.
func TestLargeRecordLifecycle(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	const name = "big"
	group := "large-" + berthtest.Suffix(env) + ".example.com"
	t.Cleanup(func() { deleteCRDs(t, env, "gauges."+group, "meters."+group) })
	chart := berthtest.LargeChart(t, "big", group)

	berthtest.MustBerth(t, env, "install", name, chart, "--set", "message=first", "--wait")
	rev1 := assertSplit(t, env, name, 1)
	if rev1.total() < 2<<20 {
		t.Errorf("the record takes %s in all, want about 3 MiB", release.Bytes(rev1.total()))
	}
	if len(rev1.parts) < 3 {
		t.Errorf("the record has %d parts, want at least 3", len(rev1.parts))
	}
	berthManifest, _ := berthtest.MustBerth(t, env, "get", "manifest", name)
	if strings.TrimSpace(rev1.manifest) != strings.TrimSpace(berthManifest) {
		t.Errorf("the record Secret does not hold the manifest berth get manifest prints:\n%s", rev1.manifest)
	}
	assertMatchesManifest(t, env, name)

	t.Run("helm reads it", func(t *testing.T) {
		if got, want := helmList(t, env), []struct{ Name, Revision, Status string }{{name, "1", "deployed"}}; !slices.Equal(got, want) {
			t.Errorf("helm list: got %+v, want %+v", got, want)
		}
		if out := berthtest.MustHelm(t, env, "status", name); !strings.Contains(out, "STATUS: deployed") || !strings.Contains(out, "big says first.") {
			t.Errorf("helm status does not say deployed and the notes:\n%s", out)
		}
		if got, want := parseHistory(t, berthtest.MustHelm(t, env, "history", name, "-o", "json")), []revision{{1, "deployed", "Install complete"}}; !slices.Equal(got, want) {
			t.Errorf("helm history: got %+v, want %+v", got, want)
		}
		if out := berthtest.MustHelm(t, env, "get", "manifest", name); out != berthManifest {
			t.Errorf("helm get manifest:\n%s\nwant what berth get manifest prints:\n%s", out, berthManifest)
		}
		if out := berthtest.MustHelm(t, env, "get", "values", name, "-o", "json"); strings.TrimSpace(out) != `{"message":"first"}` {
			t.Errorf("helm get values: %s, want the value set", out)
		}
		if out := berthtest.MustHelm(t, env, "get", "hooks", name); !strings.Contains(out, "name: big-test") || !strings.Contains(out, "helm.sh/hook: test") {
			t.Errorf("helm get hooks does not show the test hook:\n%s", out)
		}
		if out := berthtest.MustHelm(t, env, "get", "notes", name); !strings.Contains(out, "big says first.") {
			t.Errorf("helm get notes:\n%s", out)
		}
		var md struct {
			Name, Chart, Version, Status string
			Revision                     int
			Labels                       map[string]string
		}
		out := berthtest.MustHelm(t, env, "get", "metadata", name, "-o", "json")
		if err := json.Unmarshal([]byte(out), &md); err != nil {
			t.Fatalf("parse helm get metadata: %v\n%s", err, out)
		}
		if md.Name != name || md.Chart != "big" || md.Version != "0.1.0" || md.Revision != 1 || md.Status != "deployed" {
			t.Errorf("helm get metadata: %+v", md)
		}
		// The label that names the record's parts is among the release's labels, as helm reads
		// them.
		if l := md.Labels[release.PartsLabel]; !strings.HasPrefix(l, "1.3.") {
			t.Errorf("helm get metadata shows labels %v, want %s naming revision 1's 3 parts", md.Labels, release.PartsLabel)
		}
		// helm get all prints the chart's templates only with --template; what it prints by
		// default is all in the record Secret.
		if out := berthtest.MustHelm(t, env, "get", "all", name); !strings.Contains(out, "big-config") {
			t.Errorf("helm get all does not show the manifest:\n%s", out)
		}
	})

	t.Run("helm cannot upgrade it", func(t *testing.T) {
		// Helm records the whole chart in one Secret: the API server refuses it (this one, of
		// 4 MiB, as a request larger than it takes; one of 1 to 3 MiB as a Secret too long),
		// before helm changes anything.
		_, stderr, err := berthtest.Helm(t, env, "upgrade", name, chart, "--set", "message=helm")
		if err == nil || !strings.Contains(stderr, "Request entity too large") {
			t.Fatalf("helm upgrade of the large chart: %v\n%s\nwant the API server to refuse its record as too large", err, stderr)
		}
		if got := recordVersions(t, env, name); !slices.Equal(got, []int{1}) {
			t.Errorf("after the refused helm upgrade, records of revisions %v, want [1]", got)
		}
		if got := configMessage(t, env, "big-config"); got != "first" {
			t.Errorf("after the refused helm upgrade, message %q, want first", got)
		}
	})

	berthtest.MustBerth(t, env, "upgrade", name, chart, "--set", "message=second", "--wait")
	assertSplit(t, env, name, 2)
	if got := configMessage(t, env, "big-config"); got != "second" {
		t.Errorf("after berth upgrade, message %q, want second", got)
	}
	berthtest.MustBerth(t, env, "rollback", name, "1", "--wait")
	assertSplit(t, env, name, 3)
	if got := configMessage(t, env, "big-config"); got != "first" {
		t.Errorf("after berth rollback to 1, message %q, want first", got)
	}
	assertHistory(t, env, name,
		revision{1, "superseded", "Install complete"},
		revision{2, "superseded", "Upgrade complete"},
		revision{3, "deployed", "Rollback to 1"})

	// helm rollback re-applies the manifest of revision 2, which its record Secret holds, and
	// records revision 4 in one Secret: the chart it copies is the record Secret's, without the
	// templates and files that are in revision 2's parts.
	berthtest.MustHelm(t, env, "rollback", name, "2", "--wait")
	if got := configMessage(t, env, "big-config"); got != "second" {
		t.Errorf("after helm rollback to 2, message %q, want second", got)
	}
	rev4 := recordObject(t, env, name, 4)
	if a, ok := rev4.Annotations[release.PartsAnnotation]; ok {
		t.Errorf("helm's record of revision 4 has annotation %s %q", release.PartsAnnotation, a)
	}
	want := []revision{
		{1, "superseded", "Install complete"},
		{2, "superseded", "Upgrade complete"},
		{3, "superseded", "Rollback to 1"},
		{4, "deployed", "Rollback to 2"}}
	assertHistory(t, env, name, want...)
	if got := parseHistory(t, berthtest.MustHelm(t, env, "history", name, "-o", "json")); !slices.Equal(got, want) {
		t.Errorf("helm history:\n got %+v\nwant %+v", got, want)
	}
	if out, _ := berthtest.MustBerth(t, env, "status", name); !strings.Contains(out, "REVISION: 4") || !strings.Contains(out, "STATUS: deployed") {
		t.Errorf("berth status after helm rollback:\n%s", out)
	}
	rel4 := berthtest.LastRecord(t, env, name)
	if rel4.Version != 4 || rel4.Chart == nil || rel4.Chart.Metadata == nil || rel4.Chart.Metadata.Name != "big" {
		t.Fatalf("berth reads revision %d with chart %+v, want revision 4 of chart big", rel4.Version, rel4.Chart)
	}
	if len(rel4.Chart.Templates) != 0 || len(rel4.Chart.Files) != 0 {
		t.Errorf("helm's revision 4 records %d templates and %d files, want none: helm's rollback copies the record Secret's chart",
			len(rel4.Chart.Templates), len(rel4.Chart.Files))
	}
	assertRewrittenReadWhole(t, env, name, 3, false)
	manifest2, _ := berthtest.MustBerth(t, env, "get", "manifest", name, "--revision", "2")
	if manifest4, _ := berthtest.MustBerth(t, env, "get", "manifest", name); manifest4 != manifest2 {
		t.Errorf("helm's revision 4 records a manifest other than revision 2's:\n%s", manifest4)
	}
	assertMatchesManifest(t, env, name)

	out, _ := berthtest.MustBerth(t, env, "diff", "upgrade", name, chart, "--set", "message=third")
	if !strings.Contains(out, "ConfigMap/"+env.Namespace+"/big-config") || !strings.Contains(out, "+  message: third") ||
		strings.Contains(out, "Deployment") || strings.Contains(out, "gauges") {
		t.Errorf("berth diff upgrade shows more (or less) than the ConfigMap's message:\n%s", out)
	}
	berthtest.MustBerth(t, env, "upgrade", name, chart, "--set", "message=third", "--wait")
	assertSplit(t, env, name, 5)
	if got := configMessage(t, env, "big-config"); got != "third" {
		t.Errorf("after berth upgrade, message %q, want third", got)
	}

	objs := manifestObjects(t, env, name)
	berthtest.MustBerth(t, env, "uninstall", name)
	assertGone(t, env, name, objs)
	assertNoDependents(t, env)
	assertNotFound(t, env, name)
	berthtest.AssertNoRecords(t, env)
	assertNoParts(t, env)

	// helm uninstall deletes the objects of the record Secret's manifest and the record Secrets;
	// the garbage collector deletes their parts.
	berthtest.MustBerth(t, env, "install", name, chart, "--wait")
	assertSplit(t, env, name, 1)
	berthtest.MustHelm(t, env, "uninstall", name, "--wait")
	assertGone(t, env, name, objs)
	assertNotFound(t, env, name)
	berthtest.AssertNoRecords(t, env)
	waitNoParts(t, env)
}

// TestLargeRecordHistoryMax: --history-max prunes the records of a large release with their
// parts.
func TestLargeRecordHistoryMax(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	const name = "kept"
	group := "kept-" + berthtest.Suffix(env) + ".example.com"
	t.Cleanup(func() { deleteCRDs(t, env, "gauges."+group, "meters."+group) })
	chart := berthtest.LargeChart(t, "kept", group)

	berthtest.MustBerth(t, env, "install", name, chart)
	for _, m := range []string{"two", "three", "four"} {
		berthtest.MustBerth(t, env, "upgrade", name, chart, "--set", "message="+m, "--history-max", "2")
	}
	if got := recordVersions(t, env, name); !slices.Equal(got, []int{3, 4}) {
		t.Errorf("after three upgrades with --history-max 2: records of revisions %v, want [3 4]", got)
	}
	var parts []string
	for _, v := range []int{3, 4} {
		parts = append(parts, strconv.Itoa(v)+":"+strconv.Itoa(len(assertSplit(t, env, name, v).parts)))
	}
	have := map[string]int{}
	for _, p := range partSecrets(t, env) {
		have[p.Labels["version"]]++
	}
	var got []string
	for v, n := range have {
		got = append(got, v+":"+strconv.Itoa(n))
	}
	slices.Sort(got)
	if !slices.Equal(got, parts) {
		t.Errorf("parts by revision %v, want only those of revisions 3 and 4: %v", got, parts)
	}

	// helm's own pruning deletes the record Secret of revision 3, and the garbage collector
	// its parts; revision 4, which helm supersedes, is still read whole.
	berthtest.MustHelm(t, env, "rollback", name, "3", "--history-max", "2")
	if got := recordVersions(t, env, name); !slices.Equal(got, []int{4, 5}) {
		t.Errorf("after helm rollback with --history-max 2: records of revisions %v, want [4 5]", got)
	}
	poll(t, "the parts of revision 3 are gone", func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Secrets(env.Namespace).List(ctx, metav1.ListOptions{
			FieldSelector: "type=" + release.PartSecretType, LabelSelector: "name=" + name + ",version=3"})
		return err == nil && len(list.Items) == 0, err
	})
	assertRewrittenReadWhole(t, env, name, 4, false)
	berthtest.MustBerth(t, env, "uninstall", name)
	berthtest.AssertNoRecords(t, env)
	assertNoParts(t, env)
}

// TestLargeManifest takes a release whose manifest alone is more than a Secret holds: the
// manifest moves to the record's parts, and the record Secret holds a YAML comment in its place.
// helm lists the release and shows its status, history and values, but its manifest is the
// comment: helm rollback applies nothing and records the comment, and helm uninstall deletes the
// records and leaves the release's objects. berth reads and does everything.
func TestLargeManifest(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	const name = "blob"
	chart := berthtest.LargeManifestChart(t, "blob")
	blobs := []string{"blob-blob-0", "blob-blob-1", "blob-blob-2", "blob-blob-3", "blob-config"}

	berthtest.MustBerth(t, env, "install", name, chart, "--wait")
	rev1 := assertSplit(t, env, name, 1)
	if !strings.HasPrefix(rev1.manifest, "# ") || strings.Contains(rev1.manifest, "kind:") {
		t.Fatalf("the record Secret holds a manifest, want the comment that says where it is:\n%.500s", rev1.manifest)
	}
	objs := manifestObjects(t, env, name)
	if got := len(objs); got != len(blobs) {
		t.Fatalf("berth get manifest shows %d objects, want %d", got, len(blobs))
	}
	assertMatchesManifest(t, env, name)

	if got, want := helmList(t, env), []struct{ Name, Revision, Status string }{{name, "1", "deployed"}}; !slices.Equal(got, want) {
		t.Errorf("helm list: got %+v, want %+v", got, want)
	}
	if out := berthtest.MustHelm(t, env, "status", name); !strings.Contains(out, "NAME: "+name) || !strings.Contains(out, "STATUS: deployed") || !strings.Contains(out, "REVISION: 1") {
		t.Errorf("helm status does not say %s is deployed at revision 1:\n%s", name, out)
	}
	if out := berthtest.MustHelm(t, env, "get", "manifest", name); strings.TrimSpace(out) != strings.TrimSpace(rev1.manifest) {
		t.Errorf("helm get manifest:\n%.500s\nwant the record Secret's comment", out)
	}
	if out := berthtest.MustHelm(t, env, "get", "values", name, "-a", "-o", "json"); strings.TrimSpace(out) != `{"message":"hello"}` {
		t.Errorf("helm get values -a: %s", out)
	}

	berthtest.MustBerth(t, env, "upgrade", name, chart, "--set", "message=second", "--wait")
	assertSplit(t, env, name, 2)

	// helm rollback reads the manifests of both revisions from their record Secrets: comments,
	// no objects. It changes no object, and records revision 3 with the comment for a manifest.
	berthtest.MustHelm(t, env, "rollback", name, "1", "--wait")
	if got := configMessage(t, env, "blob-config"); got != "second" {
		t.Errorf("after helm rollback to 1, message %q: want second, helm applies no object", got)
	}
	rel3 := berthtest.LastRecord(t, env, name)
	if rel3.Version != 3 || rel3.Info.Status != release.StatusDeployed || rel3.Manifest != rev1.manifest {
		t.Errorf("after helm rollback: revision %d %s with manifest\n%.500s\nwant revision 3 deployed with the comment", rel3.Version, rel3.Info.Status, rel3.Manifest)
	}
	for _, cm := range blobs {
		if configMapExists(t, env, cm) == nil {
			t.Errorf("ConfigMap %s is gone after helm rollback", cm)
		}
	}
	assertRewrittenReadWhole(t, env, name, 2, true)
	// The revision helm recorded has no objects, to berth as to helm: an uninstall now would
	// delete none of them, until berth records the manifest again.
	out, _ := berthtest.MustBerth(t, env, "diff", "uninstall", name)
	t.Logf("berth diff uninstall after helm rollback:\n%s", out)
	if strings.Contains(out, "blob-blob-0") {
		t.Errorf("berth diff uninstall after helm rollback would delete the release's objects:\n%s", out)
	}

	// berth upgrades from helm's revision: its objects are the release's by their ownership
	// metadata, and the new revision records them again.
	berthtest.MustBerth(t, env, "upgrade", name, chart, "--set", "message=fourth", "--wait")
	assertSplit(t, env, name, 4)
	if got := configMessage(t, env, "blob-config"); got != "fourth" {
		t.Errorf("after berth upgrade, message %q, want fourth", got)
	}
	if got := len(manifestObjects(t, env, name)); got != len(blobs) {
		t.Errorf("berth get manifest shows %d objects, want %d", got, len(blobs))
	}
	berthtest.MustBerth(t, env, "rollback", name, "2", "--wait")
	assertSplit(t, env, name, 5)
	if got := configMessage(t, env, "blob-config"); got != "second" {
		t.Errorf("after berth rollback to 2, message %q, want second", got)
	}
	berthtest.MustBerth(t, env, "uninstall", name)
	assertGone(t, env, name, objs)
	assertNotFound(t, env, name)
	berthtest.AssertNoRecords(t, env)
	assertNoParts(t, env)

	// helm uninstall deletes the records (and the garbage collector their parts), and no
	// object: the manifest it reads is the comment.
	berthtest.MustBerth(t, env, "install", name, chart, "--wait")
	out, stderr, err := berthtest.Helm(t, env, "uninstall", name, "--wait")
	t.Logf("helm uninstall: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	if err != nil {
		t.Errorf("helm uninstall: %v", err)
	}
	berthtest.AssertNoRecords(t, env)
	waitNoParts(t, env)
	for _, cm := range blobs {
		obj := configMapExists(t, env, cm)
		if obj == nil {
			t.Errorf("ConfigMap %s is gone after helm uninstall", cm)
			continue
		}
		if rel, _, ok := resource.OwnedBy(obj); !ok || rel != name {
			t.Errorf("ConfigMap %s left by helm uninstall has labels %v, annotations %v", cm, obj.GetLabels(), obj.GetAnnotations())
		}
	}
}

// assertRewrittenReadWhole checks that berth reads whole revision version of release name, split
// by berth, whose record Secret helm rewrote (to supersede it) without its annotations: its
// chart's templates and files, and its manifest when manifestMoved, are read from its parts.
func assertRewrittenReadWhole(t *testing.T, env *testenv.Env, name string, version int, manifestMoved bool) {
	t.Helper()
	rec := recordObject(t, env, name, version)
	if a, ok := rec.Annotations[release.PartsAnnotation]; ok {
		t.Errorf("helm's rewrite of record %s kept annotation %s %q", rec.Name, release.PartsAnnotation, a)
	}
	if rec.Labels["status"] != "superseded" {
		t.Errorf("record %s has status %q, want helm's superseded", rec.Name, rec.Labels["status"])
	}
	rel, err := release.NewSecretStore(env.Client.CoreV1(), env.Namespace).Get(t.Context(), name, version)
	if err != nil {
		t.Fatalf("read revision %d of release %s, rewritten by helm: %v", version, name, err)
	}
	if len(rel.Chart.Templates) == 0 || len(rel.Chart.Files) == 0 {
		t.Errorf("revision %d, rewritten by helm, reads with %d templates and %d files, want its parts read too",
			version, len(rel.Chart.Templates), len(rel.Chart.Files))
	}
	if manifestMoved && rel.Manifest == recordedManifest(t, rec) {
		t.Errorf("revision %d, rewritten by helm, reads with the comment for a manifest, want its manifest from its parts", version)
	}
}

// configMapExists returns the live ConfigMap name, or nil.
func configMapExists(t *testing.T, env *testenv.Env, name string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind("ConfigMap")
	obj.SetName(name)
	return liveObject(t, env, obj)
}

// TestLargeHelmStorableRecord: a chart whose record fits in a Secret only at gzip's best
// compression is stored whole by helm, and by berth too, unsplit.
func TestLargeHelmStorableRecord(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.NearLimitChart(t, "near")

	berthtest.MustHelm(t, env, "install", "by-helm", chart)
	berthtest.MustBerth(t, env, "install", "by-berth", chart)
	byHelm, byBerth := recordObject(t, env, "by-helm", 1), recordObject(t, env, "by-berth", 1)
	t.Logf("record Secrets: helm's %d bytes, berth's %d bytes", len(byHelm.Data["release"]), len(byBerth.Data["release"]))
	for _, rec := range []*corev1.Secret{byHelm, byBerth} {
		if a, ok := rec.Annotations[release.PartsAnnotation]; ok {
			t.Errorf("record %s is split (%s %q)", rec.Name, release.PartsAnnotation, a)
		}
		// At gzip's default level the record would not fit: only the best level keeps it whole.
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		if _, err := w.Write(decodedRecord(t, rec)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if n := base64.StdEncoding.EncodedLen(z.Len()); n <= release.MaxObjectData {
			t.Errorf("record %s at gzip's default level takes %d bytes, which a Secret holds: the chart does not test the best level", rec.Name, n)
		}
	}
	assertNoParts(t, env)
	if d := len(byBerth.Data["release"]) - len(byHelm.Data["release"]); d < -1024 || d > 1024 {
		t.Errorf("berth's record is %d bytes larger than helm's, want the same within 1 KiB", d)
	}

	// Each reads the other's, and berth upgrades helm's release, still in one Secret.
	if got := helmList(t, env); len(got) != 2 || got[0].Status != "deployed" || got[1].Status != "deployed" {
		t.Errorf("helm list: %+v, want both releases deployed", got)
	}
	if out, _ := berthtest.MustBerth(t, env, "status", "by-helm"); !strings.Contains(out, "STATUS: deployed") || !strings.Contains(out, "REVISION: 1") {
		t.Errorf("berth status of helm's release does not say it is deployed at revision 1:\n%s", out)
	}
	berthtest.MustBerth(t, env, "upgrade", "by-helm", chart, "--set", "note=upgraded")
	if a, ok := recordObject(t, env, "by-helm", 2).Annotations[release.PartsAnnotation]; ok {
		t.Errorf("berth's upgrade of helm's release is split (%q)", a)
	}
	assertNoParts(t, env)
}
