package controller

import (
	"errors"
	"fmt"

	"github.com/berthdev/berth/internal/release"
)

// EnvStorageDriver is the environment variable that names where the controller keeps the
// releases' records, as it names helm's storage driver; the berth-controller chart sets it from
// its value storageDriver.
const EnvStorageDriver = "HELM_DRIVER"

// StorageDriverError is a storage driver the controller does not keep records with: one helm
// does not know, or memory, which would lose every record when the controller restarts and
// install each Release again as if it were new.
type StorageDriverError struct {
	Name string
	Err  error
}

func (e *StorageDriverError) Error() string {
	why := "unknown release storage driver"
	if errors.Is(e.Err, errMemoryDriver) {
		why = "the controller keeps no records in memory: it would forget every release when it restarts"
	}
	return fmt.Sprintf("%s=%q (the berth-controller chart's value storageDriver): %s; use %s (the default) or %s",
		EnvStorageDriver, e.Name, why, release.DriverSecret, release.DriverConfigMap)
}

func (e *StorageDriverError) Unwrap() error { return e.Err }

// errMemoryDriver is why the memory driver is refused.
var errMemoryDriver = errors.New("memory driver")

// ParseStorageDriver returns the driver name names as HELM_DRIVER does for helm ("" is
// release.DriverSecret), one the controller keeps records with: a *StorageDriverError for
// memory and for a name helm does not know.
func ParseStorageDriver(name string) (release.Driver, error) {
	d, err := release.ParseDriver(name)
	if err != nil {
		return "", &StorageDriverError{Name: name, Err: err}
	}
	if d == release.DriverMemory {
		return "", &StorageDriverError{Name: name, Err: errMemoryDriver}
	}
	return d, nil
}
