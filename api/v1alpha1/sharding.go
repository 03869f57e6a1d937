package v1alpha1

// The labels and annotations by which controllers share Releases out between shards, and by
// which a running controller can be found from the cluster.
const (
	// ShardKeyLabel on a Release names the shard whose controller reconciles it: the chart runs
	// a controller for each of its sharding.shards with --watch-label-selector
	// sharding.berth.dev/key=NAME, and its main controller with !sharding.berth.dev/key.
	ShardKeyLabel = "sharding.berth.dev/key"

	// ControllerLabel marks the leader election Lease of a controller; its value is the shard's
	// short hash ("all" for a controller of every Release). berth doctor lists the Leases with
	// this label to learn which controllers run and what they serve.
	ControllerLabel = "berth.dev/controller"
	// WatchLabelSelectorAnnotation on that Lease is the controller's --watch-label-selector
	// ("" selects every Release).
	WatchLabelSelectorAnnotation = "berth.dev/watch-label-selector"
	// WatchNamespaceAnnotation on that Lease is the one namespace the controller serves ("" for
	// every namespace).
	WatchNamespaceAnnotation = "berth.dev/watch-namespace"
	// RequireVerifiedAnnotation on that Lease is "true" when the controller releases only
	// verified charts (--require-verified).
	RequireVerifiedAnnotation = "berth.dev/require-verified"
	// AllowedSignersAnnotation and AllowedIssuersAnnotation on that Lease are the controller's
	// --allowed-signer and --allowed-issuer regular expressions, as a JSON array of strings
	// ("" when it gives none: any signer, any issuer).
	AllowedSignersAnnotation = "berth.dev/allowed-signers"
	AllowedIssuersAnnotation = "berth.dev/allowed-issuers"
)
