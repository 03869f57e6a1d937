package release

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"golang.org/x/sync/semaphore"
)

// Expansion bounds what a record, a part set or a journal may expand to once decompressed: a
// tenant may write any Secret of its namespace, and so a Secret shaped like a record whose gzip
// expands without end. Every stream is counted as it is decompressed and stopped at its limit,
// min(Max, max(Floor, Ratio times its compressed size)).
type Expansion struct {
	// Max is the most one stream may expand to.
	Max int64
	// Ratio, when not 0, bounds a stream by its compressed size: a record berth or Helm writes
	// expands about 11 times (its JSON holds base64 of the chart's files).
	Ratio int64
	// Floor is what a stream may expand to whatever its compressed size: small records
	// compress well.
	Floor int64
	// Budget, when not nil, is shared by the decodes under way: each takes its limit from it
	// before it starts and gives it back when it ends, so that concurrent decodes together
	// hold at most the budget's size.
	Budget *Budget
}

// DefaultExpansion is the CLI's: the most a record berth may store (MaxRecordSize,
// compressed) expands to at 16 times, with no ratio and no budget.
func DefaultExpansion() Expansion {
	return Expansion{Max: 16 * MaxRecordSize}
}

// ControllerExpansion is a controller's: a record may expand to 32 MiB (the 3 MiB record of
// docs/large-releases.md expands to 25.3 MiB), at most 20 times its compressed size beyond
// the first 4 MiB, and the decodes under way share 64 MiB.
func ControllerExpansion() Expansion {
	return Expansion{Max: 32 << 20, Ratio: 20, Floor: 4 << 20, Budget: NewBudget(64 << 20)}
}

// limit is the most a stream of compressed bytes may expand to.
func (e Expansion) limit(compressed int) int64 {
	l := e.Max
	if l <= 0 {
		l = DefaultExpansion().Max
	}
	if e.Ratio > 0 {
		l = min(l, max(e.Floor, e.Ratio*int64(compressed)))
	}
	return l
}

// Budget is a number of bytes that concurrent decodes share. A decode takes all it may need
// at once, before it starts, so that none waits for more while holding some.
type Budget struct {
	size int64
	sem  *semaphore.Weighted
}

// NewBudget returns a budget of size bytes.
func NewBudget(size int64) *Budget {
	return &Budget{size: size, sem: semaphore.NewWeighted(size)}
}

// take takes n bytes of b (at most its size), waiting for them within ctx, and returns what
// gives them back.
func (b *Budget) take(ctx context.Context, n int64) (func(), error) {
	if b == nil {
		return func() {}, nil
	}
	n = min(n, b.size)
	if err := b.sem.Acquire(ctx, n); err != nil {
		return nil, err
	}
	return func() { b.sem.Release(n) }, nil
}

// ExpansionError is a record, a part set or a journal that expands to more than its limit once
// decompressed: it was not read.
type ExpansionError struct {
	// Object names what holds it: Kind/namespace/name.
	Object string
	// What is "record", "record parts" or "journal".
	What string
	// Compressed is its size as stored; Limit what it was allowed to expand to.
	Compressed, Limit int64
}

func (e *ExpansionError) Error() string {
	return fmt.Sprintf("%s: the %s (%s compressed) expands to more than %d bytes once decompressed, more than the %s allowed: it was not read: "+
		"no record berth or Helm writes expands so far; delete the object if nobody of the release wrote it, or raise the limit (berth controller --record-expansion-limit)",
		e.Object, e.What, Bytes(int(e.Compressed)), e.Limit, Bytes(int(e.Limit)))
}

// errExpanded stops a decompression at its limit.
var errExpanded = errors.New("expanded past its limit")

// bounded reads r and fails with errExpanded once more than left bytes were read.
type bounded struct {
	r    io.Reader
	left int64
}

func (b *bounded) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errExpanded
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, errExpanded
	}
	return n, err
}

// decodeJSON decodes into v the JSON in data, gunzipped first when it is gzipped, counting
// what it expands to as it streams and stopping at e's limit. object and what name it in an
// *ExpansionError.
func (e Expansion) decodeJSON(ctx context.Context, object, what string, data []byte, v any) error {
	return e.decodeJSONOf(ctx, object, what, [][]byte{data}, v)
}

// decodeJSONOf is decodeJSON of the data that parts hold, joined, read without joining them.
// The JSON is read whole into one buffer, as json.Unmarshal needs it, sized by what the gzip
// stream says it expands to when that is within the limit and 32 times what it is compressed:
// a stream that says more grows its buffer as it expands.
func (e Expansion) decodeJSONOf(ctx context.Context, object, what string, parts [][]byte, v any) error {
	compressed := 0
	var first []byte
	for _, p := range parts {
		compressed += len(p)
		if len(first) < len(magicGzip) {
			first = append(first, p[:min(len(p), len(magicGzip)-len(first))]...)
		}
	}
	if !bytes.Equal(first, magicGzip) {
		return json.Unmarshal(bytes.Join(parts, nil), v)
	}
	limit := e.limit(compressed)
	done, err := e.Budget.take(ctx, limit)
	if err != nil {
		return fmt.Errorf("wait to decode the %s: %w", what, err)
	}
	defer done()
	readers := make([]io.Reader, len(parts))
	for i, p := range parts {
		readers[i] = bytes.NewReader(p)
	}
	zr, err := gzip.NewReader(io.MultiReader(readers...))
	if err != nil {
		return err
	}
	defer zr.Close()
	b, err := readAll(&bounded{r: zr, left: limit}, min(int64(expandsTo(parts)), limit, 32*int64(compressed)+64<<10)+1)
	if errors.Is(err, errExpanded) {
		return &ExpansionError{Object: object, What: what, Compressed: int64(compressed), Limit: limit}
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// expandsTo is what the gzip stream that parts hold says it expands to, in its last four
// bytes: the size of its last member, modulo 4 GiB.
func expandsTo(parts [][]byte) uint32 {
	var tail []byte
	for i := len(parts) - 1; i >= 0 && len(tail) < 4; i-- {
		tail = append(parts[i][max(0, len(parts[i])-(4-len(tail))):len(parts[i]):len(parts[i])], tail...)
	}
	if len(tail) < 4 {
		return 0
	}
	return binary.LittleEndian.Uint32(tail)
}

// readAll is io.ReadAll of r into a buffer of size bytes to start with.
func readAll(r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, size)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
