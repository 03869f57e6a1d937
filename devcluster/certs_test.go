package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
)

func TestGeneratePKI(t *testing.T) {
	p, err := generatePKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(p.CACert)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA certificate does not parse")
	}
	serving, err := tls.LoadX509KeyPair(p.ServingCert, p.ServingKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(serving.Certificate[0])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("serving certificate does not verify for 127.0.0.1: %v", err)
	}
	kubelet, err := tls.LoadX509KeyPair(p.KubeletCert, p.KubeletKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ = x509.ParseCertificate(kubelet.Certificate[0])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: nodeIP}); err != nil {
		t.Errorf("kubelet certificate does not verify for %s: %v", nodeIP, err)
	}
	admin, err := tls.LoadX509KeyPair(p.AdminCert, p.AdminKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ = x509.ParseCertificate(admin.Certificate[0])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin certificate does not verify as a client: %v", err)
	}
	if len(leaf.Subject.Organization) != 1 || leaf.Subject.Organization[0] != "system:masters" {
		t.Errorf("admin organization = %v, want system:masters", leaf.Subject.Organization)
	}
}
