package hostile_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/test/releasetest"
)

// expandGzip is one gzip member of n bytes of b, at the best level.
func expandGzip(t *testing.T, prefix string, b byte, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write([]byte(prefix))
	chunk := bytes.Repeat([]byte{b}, 1<<20)
	for i := 0; i < n; i += len(chunk) {
		zw.Write(chunk)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// expandTgz packs files (name, content, in order) as a packaged chart.
func expandTgz(t *testing.T, files ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	for i := 0; i+1 < len(files); i += 2 {
		if err := tw.WriteHeader(&tar.Header{Name: files[i], Mode: 0o644, Size: int64(len(files[i+1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(files[i+1]))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestExpandForgedRecord: a tenant writes, beside its Release, a Secret shaped like the record
// of its release, of some 930 KB, whose gzip expands to 700 MB. The controller stops reading it
// at its limit, names it (InvalidRecord, the Secret, the limit), grows less than maxGrowth, and
// another namespace's Release becomes Ready meanwhile.
func TestExpandForgedRecord(t *testing.T) {
	repoURL := sizesWebChart(t)
	env, c, p, q := attacked(t)

	// gzip reads members one after another: one that opens the record, then 70 of 10 MB of 'a'.
	head := fmt.Sprintf(`{"name":"web","namespace":%q,"version":1,"info":{"status":"deployed"},"manifest":"`, env.Namespace)
	z := expandGzip(t, head, 'a', 10<<20)
	member := expandGzip(t, "", 'a', 10<<20)
	for range 69 {
		z = append(z, member...)
	}
	forged := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.web.v1", Namespace: env.Namespace,
			Labels: map[string]string{"owner": "helm", "name": "web", "version": "1", "status": "deployed"}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(z))},
	}
	t.Logf("a forged record of %d KB, expanding to %d MB", len(forged.Data["release"])/1000, 700)
	if err := c.Create(t.Context(), forged); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), sizesRelease(p, env.Namespace, "web", repoURL, "")); err != nil {
		t.Fatal(err)
	}
	q.bystander(t)

	rel := releasetest.WaitFor(t, c, env.Namespace, "web", "names its record", func(rel *v1alpha1.Release) bool {
		cond := releasetest.Condition(rel, controller.ConditionReady)
		return cond != nil && cond.Reason == controller.ReasonInvalidRecord
	})
	cond := releasetest.Condition(rel, controller.ConditionReady)
	t.Logf("Release web: %s: %s", cond.Reason, cond.Message)
	limit := min(32<<20, max(4<<20, 20*len(z)))
	for _, want := range []string{"Secret/" + env.Namespace + "/sh.helm.release.v1.web.v1", fmt.Sprintf("more than %d bytes once decompressed", limit)} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("Release web: %q, want it to say %q", cond.Message, want)
		}
	}
}

// TestExpandSubchartsFromConfigMap: a packaged chart of some 17 KB in a ConfigMap, holding
// eight subcharts (charts/*.tgz) of 100 MiB of zeros each, is refused by name, all its levels
// counted, before Helm's loader holds any of it; the controller grows less than maxGrowth.
func TestExpandSubchartsFromConfigMap(t *testing.T) {
	env, c, p, q := attacked(t)

	sub := string(expandTgz(t, "zeros/Chart.yaml", "apiVersion: v2\nname: zeros\nversion: 1.0.0\n",
		"zeros/files/zeros", string(make([]byte, 100<<20))))
	files := []string{"web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 0.3.0\n"}
	for i := range 8 {
		files = append(files, fmt.Sprintf("web/charts/zeros-%d.tgz", i), sub)
	}
	chart := expandTgz(t, files...)
	t.Logf("a chart of %d KB holding eight subcharts of 100 MiB", len(chart)/1000)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "chart", Namespace: env.Namespace}, BinaryData: map[string][]byte{"web.tgz": chart}}
	if err := c.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	rel := sizesRelease(p, env.Namespace, "nested", "https://unused.example", "")
	rel.Spec.Chart = v1alpha1.ChartSource{ConfigMapRef: &v1alpha1.KeyReference{Name: "chart", Key: "web.tgz"}}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	q.bystander(t)

	cond := sizesNotReady(t, c, env.Namespace, "nested")
	for _, want := range []string{"ConfigMap/" + env.Namespace + "/chart key web.tgz", "charts/zeros-0.tgz",
		fmt.Sprintf("more than %d bytes once decompressed", controller.MaxChartContentBytes)} {
		if cond.Reason != controller.ReasonInvalidChart || !strings.Contains(cond.Message, want) {
			t.Errorf("Release nested: %s %q, want %s saying %q", cond.Reason, cond.Message, controller.ReasonInvalidChart, want)
		}
	}
}
