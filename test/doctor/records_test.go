package doctor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/berthdev/berth/internal/doctor"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// secretValue is a value every release of these tests is given: no finding may show it.
const secretValue = "hunter2-do-not-print"

// largeRelease is revision version of release name with status, whose chart carries files of size
// bytes in all that do not compress (the same for the same name, version and size).
func largeRelease(namespace, name string, version int, status release.Status, size int) *release.Release {
	rnd := rand.New(rand.NewPCG(uint64(version), uint64(len(name)*size)))
	ch := &chartv2.Chart{Metadata: &chartv2.Metadata{APIVersion: "v2", Name: name, Version: "1.0.0"}}
	for i := range 4 {
		b := make([]byte, size/4)
		for j := range b {
			b[j] = byte(rnd.UintN(256))
		}
		ch.Files = append(ch.Files, &common.File{Name: fmt.Sprintf("files/blob%d.bin", i), Data: b})
	}
	ch.Templates = []*common.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n")}}
	now := time.Now()
	return &release.Release{
		Name: name, Namespace: namespace, Version: version, Chart: ch,
		Config:   map[string]any{"password": secretValue},
		Manifest: "---\n# Source: " + name + "/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n",
		Info:     &release.Info{FirstDeployed: now, LastDeployed: now, Status: status, Description: "revision " + fmt.Sprint(version)},
	}
}

// recordSize is what the record of revision version of release name takes in the cluster, read
// from its objects: its record Secret's data, and its parts' data and count.
func recordSize(t *testing.T, env *testenv.Env, name string, version int) (object, parts, count int) {
	t.Helper()
	secrets := env.Client.CoreV1().Secrets(env.Namespace)
	rec, err := secrets.Get(t.Context(), release.Key(name, version), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := secrets.List(t.Context(), metav1.ListOptions{LabelSelector: fmt.Sprintf("owner=berth,name=%s,version=%d", name, version)})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range l.Items {
		if len(p.OwnerReferences) == 1 && p.OwnerReferences[0].UID == rec.UID {
			parts += len(p.Data["part"])
			count++
		}
	}
	return len(rec.Data["release"]), parts, count
}

// TestRecordSizeAndParts: a release whose records are split into parts, and one whose record
// Secret is near the 1 MiB an object may hold, are warnings that say their newest record's size
// and what their history holds; a record whose part was deleted is incomplete, and its fix is
// berth recover; the parts of a record Secret deleted without its dependents are orphans whose
// fix deletes them, after which doctor finds them no more. No finding shows a value of a release.
func TestRecordSizeAndParts(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	ctx := t.Context()
	store := release.NewSecretStore(env.Client.CoreV1(), env.Namespace)
	create := func(rels ...*release.Release) {
		t.Helper()
		for _, rel := range rels {
			if err := store.Create(ctx, rel); err != nil {
				t.Fatal(err)
			}
		}
	}
	ns := env.Namespace
	create(
		largeRelease(ns, "big", 1, release.StatusSuperseded, 3<<20),
		largeRelease(ns, "big", 2, release.StatusSuperseded, 3<<20),
		largeRelease(ns, "big", 3, release.StatusDeployed, 3<<20),
		largeRelease(ns, "near", 1, release.StatusDeployed, 700<<10),
		largeRelease(ns, "small", 1, release.StatusDeployed, 100<<10),
		largeRelease(ns, "broken", 1, release.StatusDeployed, 2<<20),
		largeRelease(ns, "broken", 2, release.StatusPendingUpgrade, 2<<20),
	)
	secrets := env.Client.CoreV1().Secrets(ns)

	// broken's revision 2 loses a part, as when its operation stopped while writing them.
	rec, err := secrets.Get(ctx, release.Key("broken", 2), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	count, sum, _ := strings.Cut(rec.Annotations[release.PartsAnnotation], "/")
	if err := secrets.Delete(ctx, fmt.Sprintf("%s.%s.1", release.Key("broken", 2), sum[:10]), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// big's revision 1 loses its record Secret, not its parts: the garbage collector takes the
	// record Secret's ownerReference off them and leaves them.
	oldObject, oldParts, oldCount := recordSize(t, env, "big", 1)
	if err := secrets.Delete(ctx, release.Key("big", 1), metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the record Secret of big's revision 1 is gone", func(ctx context.Context) (bool, error) {
		_, err := secrets.Get(ctx, release.Key("big", 1), metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	stdout, _, _ := berthtest.RunBerth(t, "doctor", "--kubeconfig", env.Kubeconfig, "-n", ns)
	if strings.Contains(stdout, secretValue) {
		t.Errorf("berth doctor printed a value of a release:\n%s", stdout)
	}
	rep, _ := runDoctor(t, env, "-n", ns)
	fix := "keep fewer revisions (--history-max of berth upgrade and rollback, spec.upgrade.historyMax of a berth.dev Release), " +
		"and keep large files out of the chart: its templates, files and crds/ are in every revision's record"

	// big: its newest record is split; its two revisions left hold both records.
	object2, parts2, _ := recordSize(t, env, "big", 2)
	object3, parts3, count3 := recordSize(t, env, "big", 3)
	want := fmt.Sprintf("the record of revision 3 takes %s, split: %s in its Secret and %s in %d parts; its 2 revisions kept hold %s in all",
		release.Bytes(object3+parts3), release.Bytes(object3), release.Bytes(parts3), count3, release.Bytes(object2+parts2+object3+parts3))
	got := find(rep, "record-size", "big")
	if len(got) != 1 || got[0].Severity != doctor.Warning || got[0].Problem != want || got[0].Fix != fix ||
		!strings.HasPrefix(got[0].Breaks, "helm reads its Secret alone") || got[0].Footprint == nil || len(got[0].Footprint.Records) != 2 {
		t.Errorf("record-size findings about big: %+v, want the problem %q", got, want)
	}
	if count3 < 3 || object3 > release.MaxObjectData {
		t.Errorf("big's revision 3 is kept in a record Secret of %d bytes and %d parts; want it split", object3, count3)
	}

	// near: one record Secret of 80% to 100% of an object's limit.
	objectNear, _, countNear := recordSize(t, env, "near", 1)
	if countNear != 0 || objectNear < release.MaxObjectData*8/10 || objectNear > release.MaxObjectData {
		t.Fatalf("near's record Secret holds %d bytes in %d parts; the test wants one of 80%% to 100%% of %d", objectNear, countNear, release.MaxObjectData)
	}
	want = fmt.Sprintf("the record of revision 1 takes %s in its Secret, %d%% of the 1.0 MiB one object may hold", release.Bytes(objectNear), objectNear*100/release.MaxObjectData)
	if got := find(rep, "record-size", "near"); len(got) != 1 || got[0].Problem != want || got[0].Fix != fix ||
		!strings.HasPrefix(got[0].Breaks, "a next revision whose record does not fit in one Secret is split") {
		t.Errorf("record-size findings about near: %+v, want the problem %q", got, want)
	}
	if got := find(rep, "record-size", "small"); len(got) != 0 {
		t.Errorf("a small release is reported: %+v", got)
	}

	// broken: revision 2 is incomplete; helm sees it pending-upgrade, which the release check names.
	want = fmt.Sprintf("the record of revision 2 (pending-upgrade) is incomplete: 1 of its %s parts is missing", count)
	got = find(rep, "incomplete-record", "broken")
	if len(got) != 1 || got[0].Severity != doctor.Warning || got[0].Problem != want ||
		got[0].Fix != fmt.Sprintf("berth recover broken -n %s, or the release's next berth operation, which writes revision 2 again", ns) {
		t.Errorf("incomplete-record findings about broken: %+v, want the problem %q", got, want)
	}
	if got := find(rep, "release", "broken"); len(got) != 1 || !strings.HasPrefix(got[0].Problem, "revision 2 is pending-upgrade") {
		t.Errorf("release findings about broken: %+v", got)
	}
	if got := find(rep, "record-size", "broken"); len(got) != 1 || !strings.HasPrefix(got[0].Problem, "the record of revision 1 takes ") {
		t.Errorf("record-size findings about broken: %+v, want its newest complete record, revision 1", got)
	}

	// big's revision 1: its parts are orphans; their fix deletes them, and nothing else.
	selector := fmt.Sprintf("owner=berth,name=big,version=1,%s=", release.PartSetLabel)
	got = find(rep, "orphan-parts", "big")
	if len(got) != 1 || got[0].Severity != doctor.Warning ||
		!strings.HasPrefix(got[0].Problem, fmt.Sprintf("%d parts of the record of revision 1 (Secret %s.", oldCount, release.Key("big", 1))) ||
		!strings.HasSuffix(got[0].Problem, fmt.Sprintf("hold %s, and their record object %s is gone", release.Bytes(oldParts), release.Key("big", 1))) ||
		!strings.HasPrefix(got[0].Fix, fmt.Sprintf("kubectl delete secret -n %s -l %s", ns, selector)) {
		t.Errorf("orphan-parts findings about big: %+v (its record Secret held %d bytes, its %d parts %d)", got, oldObject, oldCount, oldParts)
	}
	if len(got) == 1 {
		sel := strings.TrimPrefix(got[0].Fix, fmt.Sprintf("kubectl delete secret -n %s -l ", ns))
		if err := secrets.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, n := recordSize(t, env, "big", 3); n != count3 {
		t.Errorf("the fix of the orphans deleted parts of revision 3: %d left of %d", n, count3)
	}
	if _, err := store.Get(ctx, "big", 3); err != nil {
		t.Errorf("big's revision 3 after the orphans' fix: %v", err)
	}
	rep, _ = runDoctor(t, env, "-n", ns)
	if got := find(rep, "orphan-parts", "big"); len(got) != 0 {
		t.Errorf("orphans reported after their fix: %+v", got)
	}
	var names []string
	for _, f := range rep.Findings {
		names = append(names, f.Check+" "+f.Object.Name)
	}
	if len(find(rep, "record-size", "big")) != 1 || len(find(rep, "incomplete-record", "broken")) != 1 {
		t.Errorf("findings after the orphans' fix: %v", names)
	}
}
