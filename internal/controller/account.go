package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// ReasonServiceAccountNotFound says the ServiceAccount a Release acts as does not exist: nothing
// is done for the Release until it does.
const ReasonServiceAccountNotFound = "ServiceAccountNotFound"

// fallbackServiceAccount is the account a Release acts as when it names none and the controller
// was given no --default-service-account: its namespace's default account.
const fallbackServiceAccount = "default"

// AccountNotFoundError says the ServiceAccount a Release acts as does not exist. Impersonation
// does not check that an account exists, and RoleBindings left behind by an account that was
// deleted would still grant its name rights: the controller makes no call as an account it has
// not seen.
type AccountNotFoundError struct {
	Namespace, Name string
	// Defaulted says the Release names no account and this is the default one.
	Defaulted bool
	// Cluster, when set, is the host of the Release's cluster (spec.kubeConfig) the account
	// is missing from.
	Cluster string
	// Reader says the account is the one that reads, in the controller's cluster, the
	// kubeconfig, values and chart of a Release that releases into another cluster.
	Reader bool
}

func (e *AccountNotFoundError) Error() string {
	switch {
	case e.Cluster != "":
		return fmt.Sprintf("ServiceAccount %s/%s, spec.serviceAccountName, does not exist in cluster %s: create it there, or name an existing account of that cluster in spec.serviceAccountName",
			e.Namespace, e.Name, e.Cluster)
	case e.Reader:
		return fmt.Sprintf("ServiceAccount %s/%s, the default account, which reads the Release's kubeconfig, values and chart in this cluster (spec.serviceAccountName names an account of the cluster of spec.kubeConfig), does not exist: create it",
			e.Namespace, e.Name)
	}
	what := "spec.serviceAccountName"
	if e.Defaulted {
		what = "the default account (the Release names none in spec.serviceAccountName)"
	}
	return fmt.Sprintf("ServiceAccount %s/%s, %s, does not exist: create it, or name an existing account in spec.serviceAccountName",
		e.Namespace, e.Name, what)
}

// serviceAccountFor is the ServiceAccount a Release that names account acts as: account, or the
// controller's default.
func (r *Reconciler) serviceAccountFor(account string) string {
	switch {
	case account != "":
		return account
	case r.DefaultServiceAccount != "":
		return r.DefaultServiceAccount
	}
	return fallbackServiceAccount
}

// checkAccount makes sure the ServiceAccount d acts as exists, reading it with the controller's
// own rights: from the cache of the accounts' metadata (Accounts), which a watch keeps, and past
// it when the cache does not hold it (made a moment ago, or the cache is not readable), so that
// an account is never taken for missing because the cache lags.
func (r *Reconciler) checkAccount(ctx context.Context, d *desired, named bool) error {
	key := types.NamespacedName{Namespace: d.Namespace, Name: d.ServiceAccount}
	if r.Accounts != nil {
		if err := r.Accounts.Get(ctx, key, metadataOf("ServiceAccount")); err == nil {
			return nil
		}
	}
	var sa corev1.ServiceAccount
	err := r.uncached().Get(ctx, key, &sa)
	if apierrors.IsNotFound(err) {
		return &AccountNotFoundError{Namespace: d.Namespace, Name: d.ServiceAccount, Defaulted: !named, Reader: d.Remote != nil}
	}
	if err != nil {
		return fmt.Errorf("read ServiceAccount %s/%s: %w", d.Namespace, d.ServiceAccount, err)
	}
	return nil
}
