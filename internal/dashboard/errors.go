package dashboard

import (
	"context"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/engine"
	"github.com/berthdev/berth/internal/release"
)

// statusOf is the HTTP status of err: the API server's own when it refused the request.
func statusOf(err error) int {
	var input *InputError
	var unknown *UnknownContextError
	var off *ActionsOffError
	var blocked *engine.BlockedError
	switch {
	case errors.As(err, &input), errors.As(err, &unknown):
		return http.StatusBadRequest
	case errors.As(err, &off):
		return http.StatusForbidden
	case errors.Is(err, release.ErrNotFound):
		return http.StatusNotFound
	case errors.As(err, &blocked):
		return http.StatusConflict
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code != 0 {
		return int(status.Status().Code)
	}
	return http.StatusInternalServerError
}

// reasonOf is the API server's reason when it refused a request (Forbidden, NotFound…).
func reasonOf(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return string(status.Status().Reason)
	}
	return ""
}

// blockersOf are the blockers a blocked operation named.
func blockersOf(err error) []cluster.Blocker {
	var blocked *engine.BlockedError
	if errors.As(err, &blocked) {
		return blocked.Blockers
	}
	return nil
}
