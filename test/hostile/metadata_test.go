package hostile_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/par"
	"github.com/berthdev/berth/internal/testenv"
)

// metadataConfigMaps writes n ConfigMaps into env's namespace, each with annotations of 250 KiB
// (the API server allows 256 KiB of them): what the controller's watch of ConfigMap metadata
// receives of a tenant.
func metadataConfigMaps(t *testing.T, env *testenv.Env, n int) {
	t.Helper()
	note := strings.Repeat("a", 250<<10)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("noise-%d", i)
	}
	errs := par.Each(t.Context(), names, 8, func(ctx context.Context, name string) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: env.Namespace,
			Annotations: map[string]string{"noise.example/a": note}}}
		_, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d ConfigMaps with annotations of 250 KiB: %d MiB", n, n*250>>10)
}

// TestMetadataAnnotations: a tenant writes 400 ConfigMaps with annotations of 250 KiB each (100
// MiB) into its namespace. The controller that runs meanwhile keeps their identities alone: it
// grows less than maxGrowth, and another namespace's Release is Ready as quickly as ever. A
// controller that starts over them lists them before its caches cut them: it peaks within
// maxGrowth of the idle memory of the one that started without them, and is as quick.
func TestMetadataAnnotations(t *testing.T) {
	env := testenv.New(t)
	running := startController(t, env)
	q := running.quiet(t, env)
	metadataConfigMaps(t, env, 400)
	q.bystander(t)

	t.Run("started over them", func(t *testing.T) {
		p := startController(t, env)
		started := *q
		started.p = p
		started.bystander(t)
		peak, err := p.status("VmHWM")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("berth controller started over them: peak %d MiB, %d MiB over the idle %d MiB of one started without", peak>>20, (peak-q.idle)>>20, q.idle>>20)
		if peak-q.idle > maxGrowth {
			t.Errorf("berth controller started over 100 MiB of annotations peaked %d MiB over the idle memory of one started without, more than %d MiB", (peak-q.idle)>>20, maxGrowth>>20)
		}
	})
}
