package doctor

import (
	"fmt"
	"testing"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// BenchmarkDoctor times berth doctor over the whole cluster once it holds 2,000 more objects
// (ConfigMaps and Secrets in 20 namespaces); make bench runs it. The target is under 2 s.
func BenchmarkDoctor(b *testing.B) {
	env := testenv.New(b)
	const namespaces, perNamespace = 20, 100
	var g errgroup.Group
	g.SetLimit(32)
	for i := range namespaces {
		ns := fmt.Sprintf("%s-%02d", env.Namespace[:min(len(env.Namespace), 50)], i)
		if _, err := env.Client.CoreV1().Namespaces().Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = env.Client.CoreV1().Namespaces().Delete(b.Context(), ns, metav1.DeleteOptions{}) })
		for j := range perNamespace {
			g.Go(func() error {
				meta := metav1.ObjectMeta{Name: fmt.Sprintf("obj-%03d", j)}
				if j%2 == 0 {
					_, err := env.Client.CoreV1().ConfigMaps(ns).Create(b.Context(), &corev1.ConfigMap{ObjectMeta: meta}, metav1.CreateOptions{})
					return err
				}
				_, err := env.Client.CoreV1().Secrets(ns).Create(b.Context(), &corev1.Secret{ObjectMeta: meta}, metav1.CreateOptions{})
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, stderr, err := berthtest.RunBerth(b, "doctor", "-o", "json", "--kubeconfig", env.Kubeconfig); err != nil && stderr != "" {
			b.Fatalf("berth doctor: %v\n%s", err, stderr)
		}
	}
}
