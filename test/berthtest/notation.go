package berthtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/notaryproject/notation-go"
	notationregistry "github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/signer"
)

// NotationCA is a Notary Project certificate authority a test made: a root CA and the code-signing
// certificate it issued (digitalSignature key usage, codeSigning extended key usage, as notation
// requires), whose key signs charts.
type NotationCA struct {
	Root, Leaf *x509.Certificate
	Key        *ecdsa.PrivateKey
}

// NotationSubject is the subject of a NotationCA's signing certificate; TrustedIdentity names it.
var NotationSubject = pkix.Name{CommonName: "berth test signer", Organization: []string{"Berth"}, Locality: []string{"Seattle"}, Province: []string{"WA"}, Country: []string{"US"}}

// NotationTrustedIdentity is the trust policy identity of NotationSubject.
const NotationTrustedIdentity = "x509.subject: C=US, ST=WA, L=Seattle, O=Berth, CN=berth test signer"

// NewNotationCA makes a root CA named name and a signing certificate with NotationSubject, valid
// for an hour either side of now.
func NewNotationCA(t testing.TB, name string) *NotationCA {
	t.Helper()
	now := time.Now()
	rootKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rootTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " root", Organization: []string{"Berth"}, Country: []string{"US"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	root := createCert(t, rootTmpl, rootTmpl, &rootKey.PublicKey, rootKey)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: NotationSubject, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}
	return &NotationCA{Root: root, Leaf: createCert(t, leafTmpl, root, &key.PublicKey, rootKey), Key: key}
}

func createCert(t testing.TB, tmpl, parent *x509.Certificate, pub any, key *ecdsa.PrivateKey) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// RootPEM is the root CA's certificate, PEM, as a trust store file holds it.
func (ca *NotationCA) RootPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Root.Raw})
}

// NotationTrustPolicy is a trust policy document with one strict statement for scope, trusting
// the trust store ca:<store> and the identity (NotationTrustedIdentity, or "*").
func NotationTrustPolicy(scope, store, identity string) []byte {
	return []byte(fmt.Sprintf(`{"version":"1.0","trustPolicies":[{"name":"berth-test","registryScopes":[%q],
		"signatureVerification":{"level":"strict"},"trustStores":["ca:%s"],"trustedIdentities":[%q]}]}`, scope, store, identity))
}

// NotationSign signs the manifest that reference (a tag or digest) names in the registry's
// repository with notation-go's own signer, as `notation sign` does (a JWS envelope), and pushes the
// signature as its referrer (through the referrers tag schema on a registry without the referrers
// API).
func (r *OCIRegistry) NotationSign(t testing.TB, repo, reference string, ca *NotationCA) {
	t.Helper()
	sg, err := signer.NewGenericSigner(ca.Key, []*x509.Certificate{ca.Leaf, ca.Root})
	if err != nil {
		t.Fatal(err)
	}
	opts := notation.SignOptions{SignerSignOptions: notation.SignerSignOptions{SignatureMediaType: "application/jose+json"}, ArtifactReference: reference}
	if _, err := notation.Sign(t.Context(), sg, notationregistry.NewRepository(r.repository(t, repo)), opts); err != nil {
		t.Fatalf("notation sign %s@%s: %v", repo, reference, err)
	}
}
