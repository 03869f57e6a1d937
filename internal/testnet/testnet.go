// Package testnet has network servers for tests: servers that misbehave the way a tenant's
// repository or registry may.
package testnet

import (
	"net"
	"sync"
	"testing"
)

// SilentListener accepts TCP connections, reads nothing and writes nothing until the test ends;
// arrived receives one value per connection (while its buffer has room).
func SilentListener(t testing.TB) (addr string, arrived <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{}, 64)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			select {
			case got <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String(), got
}
