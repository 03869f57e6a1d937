package controller_test

import (
	"testing"

	"github.com/berthdev/berth/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
