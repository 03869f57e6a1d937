// Package sopsvalues reads values files encrypted with SOPS: it tells them from plain values by
// their sops metadata (not by their name), and decrypts them with the SOPS project's own library,
// returning the plaintext document in its format (YAML or JSON), to be read as any values file.
// The document is read into the tree SOPS decrypts by berth itself, as SOPS's stores read it
// (document.go).
// Its errors name why a file cannot be decrypted and the recipients it was encrypted for, and
// never quote the plaintext.
package sopsvalues

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	"github.com/getsops/sops/v3/keyservice"
	yaml "go.yaml.in/yaml/v3"

	"github.com/berthdev/berth/internal/yamlbound"
)

// Format is the format of a SOPS document.
type Format string

const (
	YAML Format = "yaml"
	JSON Format = "json"
)

// Detect reports whether data is a document SOPS encrypted, and its format: a JSON object or a
// YAML mapping whose top-level key "sops" holds SOPS's metadata (its MAC and the time it was last
// modified), each directly or through an alias. A document whose YAML aliases would expand past
// yamlbound.Local is not taken as one (reading it as values refuses it). Detect reads the
// document's node tree, where aliases stay pointers: what it costs is bounded by data's size,
// whatever its aliases expand to, so that it may be asked of any document a tenant gives.
func Detect(data []byte) (Format, bool) {
	if !bytes.Contains(data, []byte("sops")) || yamlbound.Check(data, yamlbound.Local) != nil {
		return "", false
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return "", false
	}
	meta := field(doc.Content[0], "sops")
	if meta == nil || meta.Kind != yaml.MappingNode || !isText(field(meta, "mac")) || !isText(field(meta, "lastmodified")) {
		return "", false
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		return JSON, true
	}
	return YAML, true
}

// field is the value of key in the mapping m (the last, when the key is repeated), through
// aliases; nil when m is not a mapping or has no such key.
func field(m *yaml.Node, key string) *yaml.Node {
	m = resolve(m)
	if m.Kind != yaml.MappingNode {
		return nil
	}
	var v *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := resolve(m.Content[i]); k.Kind == yaml.ScalarNode && k.Value == key {
			v = resolve(m.Content[i+1])
		}
	}
	return v
}

// resolve is the node an alias names, or n itself.
func resolve(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// isText reports whether n is a scalar that reads as a string that is not empty: a string or a
// time, not a number, a boolean or null.
func isText(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && n.Value != "" && (n.ShortTag() == "!!str" || n.ShortTag() == "!!timestamp")
}

// Reason says why a SOPS document could not be decrypted.
type Reason string

const (
	// ReasonNoKey: no key at hand decrypts the document's data key: none was found, or those
	// found are not among its recipients.
	ReasonNoKey Reason = "NoKey"
	// ReasonTampered: the data key decrypts it, but a value does not decrypt with it, or its MAC
	// does not match its content: it was changed after it was encrypted.
	ReasonTampered Reason = "Tampered"
	// ReasonMalformed: it is not a SOPS document that can be read (its metadata or a value).
	ReasonMalformed Reason = "Malformed"
	// ReasonKeyRefused: only keys of a kind the caller does not allow hold its data key (PGP,
	// cloud KMS, with AgeKeys).
	ReasonKeyRefused Reason = "KeyRefused"
)

// Error is a SOPS document that could not be decrypted: why, and the recipients its data key
// was encrypted for (age recipients, PGP fingerprints, KMS key names). It never holds plaintext.
type Error struct {
	Reason     Reason
	Recipients []string
	// Detail is what the key services said, for ReasonNoKey and ReasonKeyRefused, or what is
	// wrong with the document, for ReasonMalformed.
	Detail string
	Err    error
}

func (e *Error) Error() string {
	var msg string
	switch e.Reason {
	case ReasonNoKey:
		msg = "no key at hand decrypts it"
	case ReasonTampered:
		msg = "it was changed after it was encrypted"
		if e.Detail == "" {
			msg = "its MAC does not match its content: " + msg
		}
	case ReasonKeyRefused:
		msg = "only keys that are not allowed here decrypt it"
	default:
		msg = "it is not a SOPS document that can be read"
	}
	if len(e.Recipients) > 0 {
		msg += "; it was encrypted for " + strings.Join(e.Recipients, ", ")
	}
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Keys say which keys decrypt a document's data key.
type Keys struct {
	// Services are the key services asked, in order. Nil is the SOPS CLI's own: the keys it
	// finds for the user (age keys in SOPS_AGE_KEY_FILE, SOPS_AGE_KEY or the user's
	// sops/age/keys.txt, PGP through gpg, cloud KMS with the user's credentials).
	Services []keyservice.KeyServiceClient
	// ageOnly: the services decrypt age keys only (AgeKeys), and cloud KMS keys with cloudKMS
	// (WithCloudKMS).
	ageOnly, cloudKMS bool
}

func (k Keys) services() []keyservice.KeyServiceClient {
	if k.Services != nil {
		return k.Services
	}
	return []keyservice.KeyServiceClient{keyservice.NewLocalClient()}
}

// MaxRecipients bounds the keys a document's data key may be encrypted for: each is tried with
// every identity given.
const MaxRecipients = 128

// Decrypt decrypts the SOPS document data of format f with keys and returns the plaintext
// document in the same format, without its sops metadata. Its error is an *Error.
func Decrypt(data []byte, f Format, keys Keys) (_ []byte, err error) {
	defer func() {
		// SOPS's library reads what a document says with less care than its author may take:
		// what makes it panic is a document it cannot read.
		if p := recover(); p != nil {
			err = &Error{Reason: ReasonMalformed, Err: fmt.Errorf("the SOPS library failed on it: %v", p)}
		}
	}()
	tree, err := loadDocument(data, f)
	if err != nil {
		return nil, &Error{Reason: ReasonMalformed, Err: errors.New("its sops metadata cannot be read")}
	}
	recipients := recipientsOf(tree.Metadata)
	if len(recipients) > MaxRecipients {
		return nil, &Error{Reason: ReasonMalformed, Detail: fmt.Sprintf("it names %d recipients, more than the %d read", len(recipients), MaxRecipients)}
	}
	key, err := tree.Metadata.GetDataKeyWithKeyServices(keys.services(), nil)
	if err != nil {
		e := &Error{Reason: ReasonNoKey, Recipients: recipients, Detail: keyErrors(err), Err: err}
		if keys.ageOnly {
			// Only age identities were given (and cloud KMS keys): what SOPS would say of keys
			// of other kinds is of keys not asked.
			e.Detail = ""
			if keys.cloudKMS {
				e.Detail = keyErrors(err)
			}
			if !hasKind(tree.Metadata, "age") && !(keys.cloudKMS && hasCloud(tree.Metadata)) {
				e.Reason = ReasonKeyRefused
			}
		}
		return nil, e
	}
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(key, cipher)
	if err != nil {
		// The data key is the document's (its recipients' keys gave it): a value whose
		// authentication tag does not match was changed after it was encrypted. The cipher's
		// error may quote the value; it is not kept.
		return nil, &Error{Reason: ReasonTampered, Recipients: recipients, Detail: "a value does not decrypt with the document's data key", Err: errors.New("a value does not decrypt with the data key")}
	}
	stored, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, key, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil || stored != mac {
		return nil, &Error{Reason: ReasonTampered, Recipients: recipients}
	}
	out, err := emitDocument(tree.Branches, f)
	if err != nil {
		return nil, &Error{Reason: ReasonMalformed, Recipients: recipients, Err: errors.New("the decrypted document cannot be written")}
	}
	return out, nil
}

// recipientsOf names the master keys of every key group of m.
func recipientsOf(m sops.Metadata) []string {
	var names []string
	for _, g := range m.KeyGroups {
		for _, k := range g {
			names = append(names, k.TypeToIdentifier()+" "+k.ToString())
		}
	}
	return names
}

// keyErrors is what the key services said of the data key, on one line: SOPS's own account of
// each group and key, which names keys and never the plaintext.
func keyErrors(err error) string {
	var ue interface{ UserError() string }
	msg := err.Error()
	if errors.As(err, &ue) {
		msg = ue.UserError()
	}
	return strings.Join(strings.Fields(msg), " ")
}

// hasKind reports whether a key of kind (sops's identifier: age, pgp, kms, gcp_kms,
// azure_kv, hc_vault) holds m's data key.
func hasKind(m sops.Metadata, kind string) bool {
	for _, g := range m.KeyGroups {
		for _, k := range g {
			if k.TypeToIdentifier() == kind {
				return true
			}
		}
	}
	return false
}

// hasCloud reports whether a cloud KMS key holds m's data key.
func hasCloud(m sops.Metadata) bool {
	return slices.ContainsFunc([]string{"kms", "gcp_kms", "azure_kv", "hc_vault", "hckms"}, func(kind string) bool { return hasKind(m, kind) })
}
