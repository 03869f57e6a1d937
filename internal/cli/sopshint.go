package cli

import (
	"errors"

	"github.com/berthdev/berth/internal/sopsvalues"
)

// sopsHint says what to do about a values file encrypted with SOPS that could not be decrypted;
// "" for another error.
func sopsHint(err error) string {
	var se *sopsvalues.Error
	if !errors.As(err, &se) {
		return ""
	}
	switch se.Reason {
	case sopsvalues.ReasonNoKey:
		return "give a key of one of its recipients where sops finds it: an age key in the file SOPS_AGE_KEY_FILE names, in SOPS_AGE_KEY, or in sops/age/keys.txt of your configuration directory; a PGP key in your gpg keyring; cloud KMS through your cloud credentials"
	case sopsvalues.ReasonTampered:
		return "the file was changed after it was encrypted (by hand, or by a merge): encrypt it again with sops from what it should hold"
	case sopsvalues.ReasonMalformed:
		return "check that it is a whole SOPS document: `sops decrypt FILE` reads the same file"
	}
	return ""
}
