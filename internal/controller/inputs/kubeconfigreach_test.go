package inputs

import (
	"errors"
	"strings"
	"testing"
)

func TestReadKubeConfigRefusesReachUnlessAllowed(t *testing.T) {
	t.Parallel()
	plain := strings.Replace(kubeconfigWith("", "    token: abc"), "https://workload.example.test:6443", "http://workload.example.test:8080", 1)
	noScheme := strings.Replace(kubeconfigWith("", "    token: abc"), "https://workload.example.test:6443", "workload.example.test:8080", 1)
	tests := []struct {
		name, data  string
		field, flag string
		allow       KubeConfigReach
	}{
		{name: "insecure TLS", data: kubeconfigWith("    insecure-skip-tls-verify: true", "    token: abc"),
			field: "clusters[workload].cluster.insecure-skip-tls-verify", flag: "--allow-kubeconfig-insecure-tls", allow: KubeConfigReach{InsecureTLS: true}},
		{name: "proxy", data: kubeconfigWith("    proxy-url: http://proxy.example.test:3128", "    token: abc"),
			field: "clusters[workload].cluster.proxy-url", flag: "--allow-kubeconfig-proxy", allow: KubeConfigReach{Proxy: true}},
		{name: "plain HTTP server", data: plain,
			field: "clusters[workload].cluster.server", flag: "--allow-kubeconfig-http", allow: KubeConfigReach{PlainHTTP: true}},
		{name: "server without a scheme nor TLS data", data: noScheme,
			field: "clusters[].cluster.server", flag: "--allow-kubeconfig-http", allow: KubeConfigReach{PlainHTTP: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ReadKubeConfig([]byte(tt.data), "team-a", "kc", "value", KubeConfigReach{})
			var kc *KubeConfigError
			if !errors.As(err, &kc) {
				t.Fatalf("error %v, want a *KubeConfigError", err)
			}
			if kc.Field != tt.field || kc.Allow != tt.flag || !strings.Contains(err.Error(), tt.field) || !strings.Contains(err.Error(), tt.flag) {
				t.Errorf("error %q (field %q, flag %q), want it to name %s and %s", err, kc.Field, kc.Allow, tt.field, tt.flag)
			}
			if _, err := ReadKubeConfig([]byte(tt.data), "team-a", "kc", "value", tt.allow); err != nil {
				t.Errorf("with %s: %v", tt.flag, err)
			}
		})
	}
}

func TestReadKubeConfigRefusesWhatIsTooLarge(t *testing.T) {
	t.Parallel()
	data := kubeconfigWith("", "    token: abc") + "# " + strings.Repeat("x", maxKubeConfig) + "\n"
	_, err := parseKubeConfig([]byte(data), "team-a", "kc", "value")
	var kc *KubeConfigError
	if !errors.As(err, &kc) || !strings.Contains(err.Error(), "512 KiB") {
		t.Errorf("error %v, want a *KubeConfigError naming the limit", err)
	}
}

// FuzzKubeconfig reads any kubeconfig under any flags: it never panics, refuses with a
// *KubeConfigError, and what it accepts skips no TLS verification, goes through no proxy and is
// not plain HTTP unless allowed.
func FuzzKubeconfig(f *testing.F) {
	f.Add([]byte(kubeconfigWith("", "    token: abc")), uint8(0))
	f.Add([]byte(kubeconfigWith("    insecure-skip-tls-verify: true", "    token: abc")), uint8(1))
	f.Add([]byte(kubeconfigWith("    proxy-url: socks5://proxy:1080", "    token: abc")), uint8(2))
	f.Add([]byte(strings.Replace(kubeconfigWith("", "    token: abc"), "https://", "http://", 1)), uint8(4))
	f.Add([]byte(strings.Replace(kubeconfigWith("", "    token: abc"), "https://", "HTTP://", 1)), uint8(0))
	f.Add([]byte(strings.Replace(kubeconfigWith("", "    token: abc"), "https://", "", 1)), uint8(0))
	f.Add([]byte(kubeconfigWith("", "    exec: {command: /bin/sh}")), uint8(7))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Config","clusters":[{"name":"a","cluster":{"server":"https://x"}}],"contexts":[{"name":"a","context":{"cluster":"a"}}],"current-context":"a"}`), uint8(0))
	f.Add([]byte("{{{"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, flags uint8) {
		allow := KubeConfigReach{InsecureTLS: flags&1 != 0, Proxy: flags&2 != 0, PlainHTTP: flags&4 != 0}
		cfg, err := ReadKubeConfig(data, "team-a", "kc", "value", allow)
		if err != nil {
			if !errors.As(err, new(*KubeConfigError)) {
				t.Fatalf("error %v (%T), want a *KubeConfigError", err, err)
			}
			return
		}
		if cfg.Insecure && !allow.InsecureTLS {
			t.Errorf("accepted a cluster that skips TLS verification")
		}
		if cfg.Proxy != nil && !allow.Proxy {
			t.Errorf("accepted a cluster with a proxy")
		}
		if cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.BearerTokenFile != "" || cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" {
			t.Errorf("accepted a kubeconfig that runs a command or reads a file")
		}
		if !strings.HasPrefix(strings.ToLower(cfg.Host), "https://") && !allow.PlainHTTP && !strings.Contains(cfg.Host, "://") {
			// A server without a scheme is https only when the cluster has TLS data.
			if !cfg.Insecure && len(cfg.CAData) == 0 && len(cfg.CertData) == 0 {
				t.Errorf("accepted server %q, plain HTTP", cfg.Host)
			}
		} else if !strings.HasPrefix(strings.ToLower(cfg.Host), "https://") && !allow.PlainHTTP {
			t.Errorf("accepted server %q, not https", cfg.Host)
		}
	})
}
