package controller

import (
	"errors"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/berthdev/berth/api/v1alpha1"
)

// releasesSynced is the readiness check: ready once the cache holds every Release, so that a
// replica is not reported ready while it still knows none.
func releasesSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		inf, err := c.GetInformer(req.Context(), &v1alpha1.Release{}, cache.BlockUntilSynced(false))
		if err != nil {
			return err
		}
		if !inf.HasSynced() {
			return errors.New("the cache of Releases has not synced yet")
		}
		return nil
	}
}
