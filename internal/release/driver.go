package release

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
)

// Driver is where a store keeps its records, named as HELM_DRIVER names helm's storage drivers.
type Driver string

const (
	// DriverSecret keeps records in Secrets of type helm.sh/release.v1: helm's default.
	DriverSecret Driver = "secret"
	// DriverConfigMap keeps records in ConfigMaps, as helm's configmap driver does.
	DriverConfigMap Driver = "configmap"
	// DriverMemory keeps records, and their journals, in the process's memory: they are gone
	// when it ends.
	DriverMemory Driver = "memory"
)

// UnknownDriverError is a storage driver name helm does not know.
type UnknownDriverError struct{ Name string }

func (e *UnknownDriverError) Error() string {
	return fmt.Sprintf("unknown release storage driver %q: use %s, %s or %s", e.Name, DriverSecret, DriverConfigMap, DriverMemory)
}

// ParseDriver returns the driver name names as helm reads HELM_DRIVER: "" and "secret(s)" for
// Secrets, "configmap(s)" for ConfigMaps, "memory"; an *UnknownDriverError for any other.
func ParseDriver(name string) (Driver, error) {
	switch name {
	case "", string(DriverSecret), "secrets":
		return DriverSecret, nil
	case string(DriverConfigMap), "configmaps":
		return DriverConfigMap, nil
	case string(DriverMemory):
		return DriverMemory, nil
	}
	return "", &UnknownDriverError{Name: name}
}

// Open returns the store of the releases of namespace on driver ("" is DriverSecret), reached
// through client, which decodes records and journals within expansion and encodes records with
// enc (nil: an Encoder of the store's own; a process that opens many stores shares one, so that
// one bulky record is encoded at a time in it). It is the one place a
// store is built for an operation: the CLI builds one from HELM_DRIVER, the controller from its
// own HELM_DRIVER, for each Release with that Release's clients. Its leases are kept in the
// cluster whatever the driver; its journals in Secrets, but in memory with the records for
// DriverMemory, which keeps a new memory for each store Open returns.
func Open(driver Driver, client kubernetes.Interface, namespace string, expansion Expansion, enc *Encoder) (Store, error) {
	var s *HelmStore
	switch driver {
	case "", DriverSecret:
		s = NewSecretStore(client.CoreV1(), namespace)
	case DriverConfigMap:
		s = NewConfigMapStore(client.CoreV1(), namespace)
		s.journals = client.CoreV1()
	case DriverMemory:
		s = NewMemoryStore(namespace)
	default:
		return nil, &UnknownDriverError{Name: string(driver)}
	}
	s.leases = client.CoordinationV1()
	if enc != nil {
		s.Encoding(enc)
	}
	return s.Expanding(expansion), nil
}
