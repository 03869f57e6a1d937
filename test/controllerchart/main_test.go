// Package controllerchart tests the berth-controller chart (charts/berth-controller): installed
// with berth and with Helm on a local control plane, its Deployment becomes available, and the
// controller, run with the chart's arguments as the chart's ServiceAccount, releases with the
// rights the chart grants and no others.
package controllerchart

import (
	"testing"

	"github.com/berthdev/berth/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
