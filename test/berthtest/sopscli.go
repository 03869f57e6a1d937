package berthtest

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// sopsModule is the directory of the module that pins the sops CLI as its tool, at the sops
// version berth's go.mod requires: a module of its own, so that the CLI's dependencies stay out
// of berth's go.mod.
const sopsModule = "test/tools/sops"

// sopsBinary builds the sops CLI from its module once per test binary and returns the binary's
// path. sops has no version command; its --version flag, without the check for a newer release.
var sopsBinary = sync.OnceValues(func() (string, error) {
	return toolBinary(sopsModule, "sops", "--disable-version-check", "--version")
})

// RunSOPS runs the sops CLI, built from its module, with args as its whole command line and no
// key at all: in a new temporary directory (no .sops.yaml above it), with a new empty HOME and
// XDG_CONFIG_HOME (no sops/age/keys.txt of the user's), no SOPS_* variable of the test's
// environment, and no network but the loopback one. It fails the test when sops cannot be built.
func RunSOPS(t testing.TB, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return runSOPS(t, nil, args)
}

// RunSOPSWithAgeKey runs the sops CLI as RunSOPS does, with identity (AGE-SECRET-KEY-1...) as its
// only key, in SOPS_AGE_KEY.
func RunSOPSWithAgeKey(t testing.TB, identity string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return runSOPS(t, []string{"SOPS_AGE_KEY=" + identity}, args)
}

func runSOPS(t testing.TB, env []string, args []string) (stdout, stderr string, err error) {
	t.Helper()
	bin, err := sopsBinary()
	if err != nil {
		t.Fatalf("build sops: %v", err)
	}
	return runIsolated(t, bin, t.TempDir(), args, func(home string) []string {
		return append([]string{"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "GNUPGHOME=" + filepath.Join(home, ".gnupg"),
			"SOPS_DISABLE_VERSION_CHECK=1"}, env...)
	})
}

// SOPSEncryptCLI encrypts the values document plain, of format (yaml or json), with the sops
// CLI for the age recipients: sops encrypt --age r1,r2 --input-type format --output-type format
// FILE, as a team encrypts a values file. It fails the test when sops fails.
func SOPSEncryptCLI(t testing.TB, plain []byte, format string, recipients ...string) []byte {
	t.Helper()
	return SOPSEncryptCLIArgs(t, plain, format, nil, recipients...)
}

// SOPSEncryptCLIArgs encrypts as SOPSEncryptCLI does, with args (such as --encrypted-regex
// REGEX) added to sops's command line before the file.
func SOPSEncryptCLIArgs(t testing.TB, plain []byte, format string, args []string, recipients ...string) []byte {
	t.Helper()
	file := filepath.Join(t.TempDir(), "values."+format)
	if err := os.WriteFile(file, plain, 0o600); err != nil {
		t.Fatal(err)
	}
	line := append([]string{"encrypt", "--age", strings.Join(recipients, ","), "--input-type", format, "--output-type", format}, args...)
	stdout, stderr, err := RunSOPS(t, append(line, file)...)
	if err != nil {
		t.Fatalf("sops %s: %v\nstderr:\n%s", strings.Join(line, " "), err, stderr)
	}
	return []byte(stdout)
}

// SOPSDecryptCLI decrypts the SOPS document data, of format (yaml or json), with the sops CLI
// and identity as its only key (none when it is empty): sops decrypt --input-type format
// --output-type format FILE. It returns sops's stdout, and its stderr and error for a document
// sops refuses.
func SOPSDecryptCLI(t testing.TB, data []byte, format, identity string) (plain []byte, stderr string, err error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "values.enc."+format)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	if identity != "" {
		env = []string{"SOPS_AGE_KEY=" + identity}
	}
	stdout, stderr, err := runSOPS(t, env, []string{"decrypt", "--input-type", format, "--output-type", format, file})
	return []byte(stdout), stderr, err
}
