package source

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v4/pkg/downloader"
)

// evictionGrace is how long a chart stays in cache after it was last used, whatever the
// limit: the fetch that used it loads it from there right after.
const evictionGrace = time.Minute

// chartCache is Helm's content cache (charts and provenance files by the SHA-256 of the chart,
// or of its OCI manifest, under root), optionally bounded: when the files it holds exceed limit
// bytes, the least recently used go, except those used within evictionGrace. It is a
// downloader.Cache, so that Helm's downloader uses it too.
type chartCache struct {
	root  string
	disk  downloader.DiskCache
	limit int64
	now   func() time.Time

	mu    sync.Mutex
	files map[string]*cachedFile
	size  int64
}

type cachedFile struct {
	size int64
	used time.Time
}

// chartCache returns the cache of charts under root, shared by the fetches of f.
func (f *Fetcher) chartCache(root string) *chartCache {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.charts[root]
	if !ok {
		c = &chartCache{root: root, disk: downloader.DiskCache{Root: root}, limit: f.opts.ChartCacheBytes, now: f.opts.Now, files: map[string]*cachedFile{}}
		if c.limit > 0 {
			c.scan()
		}
		f.charts[root] = c
	}
	return c
}

// scan counts the charts and provenance files under root, last used when last written.
func (c *chartCache) scan() {
	filepath.WalkDir(c.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, downloader.CacheChart) && !strings.HasSuffix(path, downloader.CacheProv) {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			c.files[path] = &cachedFile{size: fi.Size(), used: fi.ModTime()}
			c.size += fi.Size()
		}
		return nil
	})
}

// Get returns the path of the file of key and cacheType, as Helm's DiskCache does.
func (c *chartCache) Get(key [sha256.Size]byte, cacheType string) (string, error) {
	p, err := c.disk.Get(key, cacheType)
	if err == nil && c.limit > 0 {
		c.mu.Lock()
		if f, ok := c.files[p]; ok {
			f.used = c.now()
		} else if fi, err := os.Stat(p); err == nil {
			c.files[p] = &cachedFile{size: fi.Size(), used: c.now()}
			c.size += fi.Size()
		}
		c.mu.Unlock()
	}
	return p, err
}

// Put writes data as the file of key and cacheType, then makes room.
func (c *chartCache) Put(key [sha256.Size]byte, data io.Reader, cacheType string) (string, error) {
	p, err := c.disk.Put(key, data, cacheType)
	if err != nil || c.limit <= 0 {
		return p, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return p, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.files[p]; ok {
		c.size -= f.size
	}
	c.files[p] = &cachedFile{size: fi.Size(), used: c.now()}
	c.size += fi.Size()
	c.evict()
	if c.size > c.limit {
		// Everything left was used within evictionGrace: the chart is refused rather than the
		// cache outgrowing its volume.
		os.Remove(p)
		c.size -= fi.Size()
		delete(c.files, p)
		return "", &CacheFullError{Root: c.root, Limit: c.limit, Size: fi.Size()}
	}
	return p, nil
}

// CacheFullError is a chart or provenance file refused by the chart cache: it would take the
// cache over its limit, and every file in it was used too recently to be evicted.
type CacheFullError struct {
	// Root is the cache's directory.
	Root string
	// Limit is the cache's limit in bytes; Size the size of the file refused.
	Limit, Size int64
}

func (e *CacheFullError) Error() string {
	return fmt.Sprintf("the chart cache %s is full: a file of %d bytes would take it over its limit of %d bytes, and every chart in it was used in the last %s; try again later, or give the cache more room", e.Root, e.Size, e.Limit, evictionGrace)
}

// evict removes the least recently used files, other than those used within evictionGrace,
// while the cache holds more than its limit; c.mu is held.
func (c *chartCache) evict() {
	cutoff := c.now().Add(-evictionGrace)
	for c.size > c.limit {
		var oldest string
		for p, f := range c.files {
			if f.used.Before(cutoff) && (oldest == "" || f.used.Before(c.files[oldest].used)) {
				oldest = p
			}
		}
		if oldest == "" {
			return
		}
		if err := os.Remove(oldest); err != nil && !os.IsNotExist(err) {
			return
		}
		c.size -= c.files[oldest].size
		delete(c.files, oldest)
	}
}

// forget removes paths (files a failed fetch put into the cache) from the cache and the disk.
func (c *chartCache) forget(paths []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range paths {
		os.Remove(p)
		os.Remove(filepath.Dir(p)) // when empty: the directory of the digest's first byte
		if f, ok := c.files[p]; ok {
			c.size -= f.size
			delete(c.files, p)
		}
	}
}
