package source

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/downloader"
)

// TestChartCacheHoldsItsLimitWhenEverythingIsRecent: a chart that would take the cache over its
// limit while every file in it was used within evictionGrace is refused, naming the cache, and
// the cache stays under its limit.
func TestChartCacheHoldsItsLimitWhenEverythingIsRecent(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	o := DefaultFetchOptions()
	o.ChartCacheBytes, o.Now = 1000, func() time.Time { return now }
	c := NewFetcher(o).chartCache(t.TempDir())
	for i := range 3 {
		key := sha256.Sum256([]byte{byte(i)})
		_, err := c.Put(key, bytes.NewReader(make([]byte, 400)), downloader.CacheChart)
		var full *CacheFullError
		switch {
		case i < 2 && err != nil:
			t.Fatalf("put %d: %v", i, err)
		case i == 2 && (!errors.As(err, &full) || full.Limit != 1000):
			t.Fatalf("put %d: %v, want a *CacheFullError at 1000 bytes", i, err)
		}
	}
	if c.size > c.limit || len(filesOf(c)) != 2 {
		t.Errorf("cache holds %d bytes in %d files, want at most %d in 2", c.size, len(filesOf(c)), c.limit)
	}
}

func filesOf(c *chartCache) map[string]*cachedFile {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.files
}
