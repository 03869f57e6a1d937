package chart

import (
	"compress/gzip"
	"fmt"
	"io"
)

// ContentSizeError is a packaged chart whose content, once decompressed, is larger than a limit.
type ContentSizeError struct {
	// Name says where the package comes from.
	Name  string
	Limit int64
}

func (e *ContentSizeError) Error() string {
	return fmt.Sprintf("load chart %s: its content is larger than the %d bytes allowed once decompressed", e.Name, e.Limit)
}

// CheckContentSize reads the packaged chart r (a gzip of a tar) through, holding none of it,
// and returns a *ContentSizeError when its content (the tar stream) is more than limit bytes
// once decompressed: a small archive of much repeated content is refused before a loader holds
// it. What is not a gzip stream, or fails to read, is left to the loader to refuse.
func CheckContentSize(name string, r io.Reader, limit int64) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil
	}
	defer zr.Close()
	n, _ := io.Copy(io.Discard, io.LimitReader(zr, limit+1))
	if n > limit {
		return &ContentSizeError{Name: name, Limit: limit}
	}
	return nil
}
