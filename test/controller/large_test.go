package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// largeChart is the chart name whose files/ hold files of fileSize bytes each, and whose crds/
// (when group is set) holds a CRD of group with a description of crdSize bytes: a record of
// about files*fileSize+crdSize bytes. Its one template is the ConfigMap name-config, of the
// value round.
func largeChart(t *testing.T, name, group string, files, fileSize, crdSize int) string {
	all := map[string]string{
		"values.yaml":           "round: 0\n",
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "-config}\ndata: {round: \"{{ .Values.round }}\"}\n",
	}
	for i := range files {
		all[fmt.Sprintf("files/blob-%d.txt", i)] = berthtest.Noise(uint64(i+1), fileSize)
	}
	if group != "" {
		crd := berthtest.CRD("Blob", group, "Namespaced", []string{"v1"}, "size")
		all["crds/blob.yaml"] = strings.Replace(crd, "      openAPIV3Schema:\n        type: object\n",
			"      openAPIV3Schema:\n        type: object\n        description: "+berthtest.Noise(99, crdSize)+"\n", 1)
	}
	return berthtest.VersionedChart(t, name, "0.1.0", all)
}

// secretsOfType are the Secrets of the test's namespace of type typ (a record's or a part's),
// by name, with the size of their data.
func secretsOfType(t *testing.T, env *testenv.Env, typ string) map[string]int {
	t.Helper()
	list, err := env.Client.CoreV1().Secrets(env.Namespace).List(t.Context(), metav1.ListOptions{FieldSelector: "type=" + typ})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, s := range list.Items {
		for _, v := range s.Data {
			out[s.Name] += len(v)
		}
	}
	return out
}

// checkFootprint checks that status.record of got says what the record of its revision takes:
// the record Secret's data and its parts', in parts, and that the record is split.
func checkFootprint(t *testing.T, env *testenv.Env, got *v1alpha1.Release) {
	t.Helper()
	key := release.Key(got.Status.ReleaseName, got.Status.Revision)
	records := secretsOfType(t, env, "helm.sh/release.v1")
	parts := secretsOfType(t, env, release.PartSecretType)
	total, count := records[key], 0
	for name, n := range parts {
		if strings.HasPrefix(name, key+".") {
			total += n
			count++
		}
	}
	r := got.Status.Record
	if r == nil || r.Bytes != int64(total) || int(r.Parts) != count || count < 3 {
		t.Errorf("status.record %+v; want the %d bytes of record %s and its %d parts, in 3 or more parts", r, total, key, count)
	}
	t.Logf("revision %d: record of %s in %d parts", got.Status.Revision, release.Bytes(total), count)
}

// TestLargeRecordInstallsUpgradesAndUninstalls releases, through a Release, a chart whose record
// takes about 3 MiB (its files/ and crds/, 4.3 MiB of text), three times what a Secret holds: it installs and is
// Ready, its status says what its record takes, an Event says it is kept in parts, it upgrades,
// and deleting the Release leaves no record, no part and none of its objects (its CRD is kept,
// as Helm keeps it).
func TestLargeRecordInstallsUpgradesAndUninstalls(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	group := "blobs-" + berthtest.Suffix(env) + ".example.com"
	crdName := "blobs." + group
	crds := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions()
	t.Cleanup(func() { _ = crds.Delete(context.Background(), crdName, metav1.DeleteOptions{}) })
	chart := largeChart(t, "large", group, 4, 1<<20, 256<<10)
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, chart)
	releasetest.Deployer(t, env, "deployer")
	crdRights(t, env, "deployer")

	ctl := newController(t, env)
	ctl.start()
	if err := c.Create(t.Context(), releaseOf(t, env.Namespace, "large", repo.URL, "large", "deployer", "{round: 1}")); err != nil {
		t.Fatal(err)
	}
	got := releasetest.WaitFor(t, c, env.Namespace, "large", "is installed", readyAt(1))
	checkFootprint(t, env, got)
	if _, err := crds.Get(t.Context(), crdName, metav1.GetOptions{}); err != nil {
		t.Errorf("the install did not create the CRD of crds/: %v", err)
	}
	waitForEvent(t, env, controller.ReasonLargeRecord, "revision 1 takes")

	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"values":{"round":2}}}`))
	if err := c.Patch(t.Context(), got, patch); err != nil {
		t.Fatal(err)
	}
	got = releasetest.WaitFor(t, c, env.Namespace, "large", "is upgraded", readyAt(2))
	checkFootprint(t, env, got)
	cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "large-config", metav1.GetOptions{})
	if err != nil || cm.Data["round"] != "2" {
		t.Errorf("ConfigMap large-config after the upgrade: %v %v, want round 2", cm.Data, err)
	}
	if n := len(secretsOfType(t, env, release.PartSecretType)); n < 6 {
		t.Errorf("%d parts after the upgrade, want those of both revisions", n)
	}

	if err := c.Delete(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitGone(t, c, env.Namespace, "large")
	for _, typ := range []string{"helm.sh/release.v1", release.PartSecretType, release.JournalSecretType} {
		if left := secretsOfType(t, env, typ); len(left) > 0 {
			t.Errorf("Secrets of type %s left after the uninstall: %v", typ, left)
		}
	}
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "large-config")
	assertNoLease(t, env, "large")
	ctl.running()
}

// TestLargeRecordRefusedBeforeAnythingChanges releases, through a Release with retries, a chart
// whose record would take about 19 MiB (27 MiB of files, of 4.5 MiB each), more than a record may: the Release is Stalled with
// reason RecordTooLarge, naming the size and the limit, and nothing was created, no object and
// no record.
func TestLargeRecordRefusedBeforeAnythingChanges(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	chart := largeChart(t, "huge", "", 6, 9<<19, 0)
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, chart)
	releasetest.Deployer(t, env, "deployer")

	ctl := newController(t, env)
	// Its chart renders more than 16 MiB: more than the default render budget holds, as for any
	// chart this large (docs/controller.md: raise render.memory with it).
	ctl.flags = []string{"--render-memory", "512Mi"}
	ctl.start()
	rel := releaseOf(t, env.Namespace, "huge", repo.URL, "huge", "deployer", "{round: 1}")
	rel.Spec.Install = &v1alpha1.InstallSpec{OperationSpec: v1alpha1.OperationSpec{Retries: 3, RetryBackoff: &metav1.Duration{Duration: time.Second}}}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := releasetest.WaitFor(t, c, env.Namespace, "huge", "is refused", func(rel *v1alpha1.Release) bool {
		s := releasetest.Condition(rel, controller.ConditionStalled)
		return s != nil && s.Status == metav1.ConditionTrue && rel.Status.ObservedGeneration == rel.Generation
	})
	stalled := releasetest.Condition(got, controller.ConditionStalled)
	ready := releasetest.Condition(got, controller.ConditionReady)
	if stalled.Reason != controller.ReasonRecordTooLarge || ready.Status != metav1.ConditionFalse || ready.Reason != controller.ReasonRecordTooLarge ||
		!strings.Contains(stalled.Message, "MiB") || !strings.Contains(stalled.Message, release.Bytes(release.MaxRecordSize)) {
		t.Errorf("Stalled %+v, Ready %+v; want both with reason %s, naming the record's size and the %s it may take",
			stalled, ready, controller.ReasonRecordTooLarge, release.Bytes(release.MaxRecordSize))
	}
	t.Logf("Stalled: %s", stalled.Message)
	if got.Status.Failures != 1 || got.Status.Revision != 0 || got.Status.Record != nil {
		t.Errorf("failures %d, revision %d, record %+v; want one failure and nothing deployed", got.Status.Failures, got.Status.Revision, got.Status.Record)
	}
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "huge-config")
	for _, typ := range []string{"helm.sh/release.v1", release.PartSecretType, release.JournalSecretType} {
		if left := secretsOfType(t, env, typ); len(left) > 0 {
			t.Errorf("Secrets of type %s after the refusal: %v", typ, left)
		}
	}
	assertNoLease(t, env, "huge")
	waitForEvent(t, env, controller.ReasonRecordTooLarge, release.Bytes(release.MaxRecordSize))
	// Stalled is final: over three of its retry backoffs it is not tried again.
	neverRetried(t, c, env.Namespace, "huge", 3*time.Second)

	if err := c.Delete(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitGone(t, c, env.Namespace, "huge")
	ctl.running()
}

// neverRetried reads the Release name over d and fails the test once it counts another failure
// than its first, or another attempt.
func neverRetried(t *testing.T, c client.Client, ns, name string, d time.Duration) {
	t.Helper()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	end := time.NewTimer(d)
	defer end.Stop()
	for {
		var rel v1alpha1.Release
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &rel); err != nil {
			t.Fatal(err)
		}
		if rel.Status.Failures != 1 || rel.Status.Revision != 0 {
			t.Fatalf("Release %s/%s was tried again after it stalled: %d failures, revision %d", ns, name, rel.Status.Failures, rel.Status.Revision)
		}
		select {
		case <-end.C:
			return
		case <-t.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// assertNoLease checks that release name has no Lease left in the test's namespace.
func assertNoLease(t *testing.T, env *testenv.Env, name string) {
	t.Helper()
	_, err := env.Client.CoordinationV1().Leases(env.Namespace).Get(t.Context(), release.LeaseKey(name), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("Lease %s exists (or cannot be read: %v), want it gone", release.LeaseKey(name), err)
	}
}

// waitForEvent waits until an Event of a Release has reason and a note that says say.
func waitForEvent(t *testing.T, env *testenv.Env, reason, say string) {
	t.Helper()
	var seen []string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, releasetest.WaitTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := env.Client.EventsV1().Events(env.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		seen = seen[:0]
		for _, e := range list.Items {
			if e.Regarding.Kind != "Release" {
				continue
			}
			seen = append(seen, e.Reason+": "+e.Note)
			if e.Reason == reason && strings.Contains(e.Note, say) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no Event %s saying %q: %v; Events of Releases:\n%s", reason, say, err, strings.Join(seen, "\n"))
	}
}
