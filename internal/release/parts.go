package release

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/berthdev/berth/internal/par"
)

// A record larger than an object can hold is kept in two places. The record object (the Secret
// or ConfigMap Helm's driver reads) keeps everything helm reads of a release: its info, labels,
// values, chart metadata, hooks and, unless it must move too, its manifest. What does not fit
// moves to the record's parts: the chart's templates and files first, then the manifest. The
// parts are objects of the same kind, named after the record, owned by it (so that deleting the
// record, as helm uninstall and helm's history pruning do, deletes them too) and labelled so
// that helm's driver never reads them as records.
//
// What moved is one JSON document (a remainder), gzipped and cut into parts of at most
// MaxObjectData bytes. The record object's annotation PartsAnnotation says how many parts there
// are and the sha256 of the whole, so a record whose parts are missing or changed is never read
// as a release.

// MaxObjectData is the most a Secret's (or a ConfigMap's) data may hold: the API server refuses
// a larger object.
const MaxObjectData = 1 << 20

// MaxRecordSize is the most one revision's record may take in all, its object and its parts
// together, compressed: 16 MiB, sixteen objects' worth. A release whose record is larger is
// refused before anything changes.
const MaxRecordSize = 16 << 20

// PartsAnnotation, on a record object whose record has parts, is "COUNT/SHA256": how many parts
// hold the rest of the record, and the sha256 of their contents joined, in hex.
const PartsAnnotation = "berth.dev/record-parts"

// PartsLabel, on a record object whose record has parts, is "VERSION.COUNT.SUM": its revision,
// how many parts it has and the first 48 hex digits of their sha256. Helm's driver keeps the
// labels of a record object it rewrites (to change a revision's status, as helm rollback, helm
// upgrade and helm uninstall --keep-history do), where it drops PartsAnnotation; helm rollback
// also copies a revision's labels onto the revision it writes, whole, in one object, whose
// version is not the one the label names.
const PartsLabel = "berth.dev/record-parts"

// labelSum is how many hex digits of the parts' sha256 PartsLabel holds.
const labelSum = 48

// PartSetLabel, on each part, is the first 16 hex digits of the sha256 of its record's parts.
const PartSetLabel = "berth.dev/part-set"

// PartSecretType is the type of the Secrets that hold parts of records: not Helm's, so that
// nothing that reads Helm's records reads them.
const PartSecretType = "berth.dev/release-part.v1"

// partDataKey is the key of a part's data.
const partDataKey = "part"

// movedManifest replaces, in a record object, a manifest that moved to the record's parts.
const movedManifest = "# The manifest of this revision is larger than one object can hold: it is kept in the\n" +
	"# record's parts (" + PartSecretType + "). Read it with berth get manifest.\n"

// remainder is what moved out of a record object: the chart's templates and files, and the
// manifest when it moved too.
type remainder struct {
	Templates []*common.File `json:"templates"`
	Files     []*common.File `json:"files"`
	Manifest  *string        `json:"manifest,omitempty"`
}

// counted is a buffer that keeps at most max bytes, and counts what is written past them.
type counted struct {
	bytes.Buffer
	max, n int
}

func (c *counted) Write(p []byte) (int, error) {
	c.n += len(p)
	if c.n <= c.max {
		return c.Buffer.Write(p)
	}
	c.Buffer.Reset()
	return len(p), nil
}

// encoding is a record as it is written: the record object's data and, when the record does not
// fit in one object, the parts.
type encoding struct {
	// data is the record object's, as Helm's drivers keep it: JSON, gzipped, in base64.
	data []byte
	// parts hold the gzipped remainder, each at most MaxObjectData bytes; none when the whole
	// record is in data.
	parts [][]byte
	// sum is the sha256 of the parts joined, in hex.
	sum string
	// moved names what moved to the parts: "templates and files", then "manifest".
	moved []string
}

// partsAnnotation is the value of PartsAnnotation for e; "" when e has no parts.
func (e *encoding) partsAnnotation() string {
	if len(e.parts) == 0 {
		return ""
	}
	return strconv.Itoa(len(e.parts)) + "/" + e.sum
}

// partsLabel is the value of PartsLabel for e, the record of revision version; "" when e has no
// parts.
func (e *encoding) partsLabel(version int) string {
	if len(e.parts) == 0 {
		return ""
	}
	return strconv.Itoa(version) + "." + strconv.Itoa(len(e.parts)) + "." + e.sum[:labelSum]
}

// size is how many bytes the record takes in all.
func (e *encoding) size() int {
	n := len(e.data)
	for _, p := range e.parts {
		n += len(p)
	}
	return n
}

// TooLargeError is a release whose record cannot be stored, even with its chart and manifest in
// parts.
type TooLargeError struct {
	Name    string
	Version int
	// Size is what the record would take, compressed; Limit is what it may take.
	Size, Limit int
	// What says which limit: "record" (MaxRecordSize in all) or "record object" (what stays in
	// the record object after everything that can move has moved, MaxObjectData).
	What string
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("release %s revision %d: the %s would take %s, more than the %s it may take",
		e.Name, e.Version, e.What, Bytes(e.Size), Bytes(e.Limit))
}

// Bytes says a number of bytes for people: 1.4 MiB, 820 KiB, 12 B.
func Bytes(n int) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 0, 64) + " KiB"
	}
	return strconv.Itoa(n) + " B"
}

// Encoder encodes records as the store writes them, one bulky record at a time, and keeps the
// last split record it encoded: an operation checks that its record can be stored (Fits) before
// it writes it, and a record is split at the cost of compressing megabytes. Stores that share an
// Encoder (a controller's, one per reconcile) share both; a nil *Encoder encodes alone.
type Encoder struct {
	// bulky lets one bulky record be encoded at a time.
	bulky *par.Slots
	// last is the last split record encoded, by the key of its JSON.
	last splitCache
	// json keeps the JSON of the chart files and manifests of the last records encoded.
	json jsonCache
	// rests keeps the compressed remainders of the last split records encoded.
	rests restCache
	// ahead are the records being encoded, or encoded, before their writes (EncodeAhead).
	ahead aheadCache
}

// NewEncoder returns an Encoder that encodes one bulky record at a time.
func NewEncoder() *Encoder {
	return &Encoder{bulky: par.NewSlots(1)}
}

// Fork returns an Encoder that encodes one bulky record at a time with c and its other forks,
// and keeps caches of its own: an operation's encodings (its chart files' and manifest's JSON,
// its split record) go with the operation's Encoder, not with one a process keeps for its life.
// A nil c forks nil.
func (c *Encoder) Fork() *Encoder {
	if c == nil {
		return nil
	}
	return &Encoder{bulky: c.bulky}
}

// encode encodes rel as Helm's drivers keep a record: its JSON, gzipped, in base64. Helm gzips at
// best compression, which costs three times the default level's time for 0 to 4% less; records
// are written at the fastest level when they would fit in one object even uncompressed, at the
// default level otherwise, at best compression when that is what keeps a record within one
// object, and only when even that does not, split: the chart's templates and files move to
// parts, and then the manifest. Helm reads each of these record objects; a release helm can
// store is never split.
func (c *Encoder) encode(rel *Release) (*encoding, error) {
	if c == nil {
		c = NewEncoder()
	}
	if bulk(rel) > bulky {
		// Encoding holds the record's JSON whole, some times its chart's files: one such
		// record at a time, so that several large releases do not hold theirs at once.
		defer c.bulky.Hold()()
	}
	j, err := c.json.recordJSON(rel)
	if err != nil {
		return nil, err
	}
	return c.encodeJSON(rel, j)
}

// encodeJSON is encode of rel, whose JSON is j. A record that takes more than one object
// uncompressed is kept as the last one encoded: the write that follows an operation's Fits
// finds it.
func (c *Encoder) encodeJSON(rel *Release, j *recordJSON) (*encoding, error) {
	sum := j.key()
	if e := c.last.get(sum); e != nil {
		return e, nil
	}
	if e := c.ahead.take(sum); e != nil {
		return e, nil
	}
	e, err := encodeRecord(rel, j, MaxObjectData, &c.rests)
	if err == nil && (len(e.parts) > 0 || j.size() > MaxObjectData) {
		c.last.set(sum, e)
	}
	return e, err
}

// EncodeAhead starts encoding the record of rel as it is now, beside what the caller does next,
// for a write of that record that follows: the write takes the encoding when the record's JSON
// is the same, and encodes its own when it is not. Only a record that fits in one object
// whatever its compression is encoded ahead, each of them at most a megabyte; a few are kept,
// the newest.
func (c *Encoder) EncodeAhead(rel *Release) {
	if c == nil || bulk(rel) > MaxObjectData {
		return
	}
	j, err := c.json.recordJSON(rel)
	if err != nil || !alwaysFits(j.size(), MaxObjectData) {
		return
	}
	sum := j.key()
	a := &aheadEncoding{sum: sum, done: make(chan struct{})}
	if !c.ahead.add(a) {
		return
	}
	named := &Release{Name: rel.Name, Version: rel.Version}
	go func() {
		defer close(a.done)
		a.e, a.err = encodeRecord(named, j, MaxObjectData, nil)
	}()
}

// aheadKept is how many records encoded ahead an Encoder keeps: an operation's pending record,
// its deployed one and the revisions that one supersedes.
const aheadKept = 4

// aheadCache keeps the records encoded ahead, by the key of their JSON, the newest aheadKept.
type aheadCache struct {
	mu   sync.Mutex
	kept []*aheadEncoding
}

// aheadEncoding is a record being encoded ahead: e and err once done is closed.
type aheadEncoding struct {
	sum  [sha256.Size]byte
	done chan struct{}
	e    *encoding
	err  error
}

// add keeps a, unless the same record is kept already.
func (c *aheadCache) add(a *aheadEncoding) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.kept {
		if k.sum == a.sum {
			return false
		}
	}
	if len(c.kept) == aheadKept {
		c.kept = slices.Delete(c.kept, 0, 1)
	}
	c.kept = append(c.kept, a)
	return true
}

// take returns the record of JSON key sum encoded ahead, once done, and keeps it no more; nil
// when there is none, or its encoding failed.
func (c *aheadCache) take(sum [sha256.Size]byte) *encoding {
	c.mu.Lock()
	i := slices.IndexFunc(c.kept, func(a *aheadEncoding) bool { return a.sum == sum })
	if i < 0 {
		c.mu.Unlock()
		return nil
	}
	a := c.kept[i]
	c.kept = slices.Delete(c.kept, i, i+1)
	c.mu.Unlock()
	<-a.done
	if a.err != nil {
		return nil
	}
	return a.e
}

// bulky is the size of a record's chart files and manifest past which it is encoded alone.
const bulky = 8 << 20

// bulk is the size of what rel's record holds in its chart's templates and files and its manifest.
func bulk(rel *Release) int {
	n := len(rel.Manifest)
	if rel.Chart != nil {
		for _, f := range slices.Concat(rel.Chart.Templates, rel.Chart.Files) {
			n += len(f.Data)
		}
	}
	return n
}

type splitCache struct {
	mu  sync.Mutex
	sum [sha256.Size]byte
	e   *encoding
}

func (c *splitCache) get(sum [sha256.Size]byte) *encoding {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.e != nil && c.sum == sum {
		return c.e
	}
	return nil
}

func (c *splitCache) set(sum [sha256.Size]byte, e *encoding) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sum, c.e = sum, e
}

// encodeWithin is encode with objects that hold at most limit bytes.
func encodeWithin(rel *Release, limit int) (*encoding, error) {
	j, err := (&jsonCache{}).recordJSON(rel)
	if err != nil {
		return nil, err
	}
	return encodeRecord(rel, j, limit, nil)
}

// encodeRecord is encodeWithin of rel, whose JSON is j. Compressing a record that does not fit
// in one object stops once it is clearly over, so that a chart of many megabytes is not held
// compressed and in base64 only to be found too large. The remainder of a split record is
// compressed once for rests (nil: each time): the records of one revision (pending, deployed,
// superseded) differ in their record objects alone.
func encodeRecord(rel *Release, j *recordJSON, limit int, rests *restCache) (*encoding, error) {
	data, err := fitting(j, limit)
	if err != nil || data != nil {
		return &encoding{data: data}, err
	}
	stripped := j.withoutFiles()
	moved := []string{"templates and files"}
	withManifest := false
	data, err = fitting(stripped, limit)
	if err == nil && data == nil {
		stripped, withManifest = stripped.withManifest(movedManifestJSON), true
		moved = append(moved, "manifest")
		data, err = fitting(stripped, limit)
	}
	if err != nil {
		return nil, err
	}
	if data == nil {
		// What is left is the values, hooks and notes: small enough to measure whole.
		_, n, err := gzipWithin(stripped.f[:], gzip.BestCompression, math.MaxInt)
		if err != nil {
			return nil, err
		}
		size := base64.StdEncoding.EncodedLen(n)
		return nil, &TooLargeError{Name: rel.Name, Version: rel.Version, Size: size, Limit: limit, What: "record object"}
	}
	z, size, err := rests.compress(j.remainder(withManifest), MaxRecordSize-len(data))
	if err != nil {
		return nil, err
	}
	if z == nil {
		return nil, &TooLargeError{Name: rel.Name, Version: rel.Version, Size: len(data) + size, Limit: MaxRecordSize, What: "record"}
	}
	e := &encoding{data: data, moved: moved}
	sum := sha256.Sum256(z)
	e.sum = hex.EncodeToString(sum[:])
	for len(z) > 0 {
		n := min(len(z), limit)
		e.parts = append(e.parts, z[:n])
		z = z[n:]
	}
	if e.size() > MaxRecordSize {
		return nil, &TooLargeError{Name: rel.Name, Version: rel.Version, Size: e.size(), Limit: MaxRecordSize, What: "record"}
	}
	return e, nil
}

// movedManifestJSON is movedManifest's JSON.
var movedManifestJSON, _ = json.Marshal(movedManifest)

// fitting is the record object's data for a release whose JSON is j: at the default level, or at
// the best if that is what fits in limit bytes; nil when neither fits.
func fitting(j *recordJSON, limit int) (data []byte, err error) {
	if alwaysFits(j.size(), limit) {
		// Whatever the level, gzip keeps this record within limit: it is written at the
		// fastest, whose state is the smallest to set up, since an operation waits for each of
		// its records' writes, and a few hundred bytes more matter little.
		data, _, err = gzipWithin(j.f[:], gzip.BestSpeed, limit)
		return data, err
	}
	fits := base64.StdEncoding.DecodedLen(limit) // the most gzip may give for limit in base64
	// The best level saves a few percent of the default's bytes on a record's JSON, never an
	// eighth: past that, the default's compression stops, and the best is not tried.
	data, n, err := gzipWithin(j.f[:], gzip.DefaultCompression, fits+fits/8)
	if err != nil || data == nil || n <= fits {
		return data, err
	}
	data, _, err = gzipWithin(j.f[:], gzip.BestCompression, fits)
	return data, err
}

// alwaysFits says whether n bytes of JSON, gzipped at any level and in base64, take at most
// limit bytes: gzip adds at most 5 bytes in every 64 KiB and a header; base64 makes 4 bytes of 3.
func alwaysFits(n, limit int) bool {
	return (n+n/1024+64)/3*4+4 <= limit
}

// errOver stops a compression whose output passed its limit.
var errOver = errors.New("over the limit")

// capped counts what is written through it to w, and refuses to pass max bytes.
type capped struct {
	w      io.Writer
	max, n int
}

func (c *capped) Write(p []byte) (int, error) {
	if c.n+len(p) > c.max {
		return 0, errOver
	}
	c.n += len(p)
	return c.w.Write(p)
}

// gzipWithin is the JSON object of fields fs gzipped at level, in base64, and how many bytes the
// gzip took, when that is at most max; nil and 0 when it takes more. The JSON is written into
// gzip a piece at a time, and gzip into base64, into one buffer.
func gzipWithin(fs []field, level, max int) ([]byte, int, error) {
	size := 0
	_ = eachOf(fs, func(b []byte) error { size += len(b); return nil })
	var out bytes.Buffer
	// A record's JSON compresses about ten times; less, and the buffer grows.
	out.Grow(base64.StdEncoding.EncodedLen(min(max, size/8+512)))
	b64 := base64.NewEncoder(base64.StdEncoding, &out)
	c := &capped{w: b64, max: max}
	z, err := gzipWriter(c, level)
	if err != nil {
		return nil, 0, err
	}
	defer putGzipWriter(z, level)
	err = eachOf(fs, func(b []byte) error { _, err := z.Write(b); return err })
	if err == nil {
		err = z.Close()
	}
	if errors.Is(err, errOver) {
		return nil, 0, nil
	}
	if err == nil {
		err = b64.Close()
	}
	if err != nil {
		return nil, 0, err
	}
	return out.Bytes(), c.n, nil
}

// compress is the JSON object of fields fs (a remainder's), gzipped, when that takes at most
// max bytes; nil and the size it takes when more: past max, what it takes is only counted.
func compress(fs []field, max int) (z []byte, size int, err error) {
	n := 0
	_ = eachOf(fs, func(b []byte) error { n += len(b); return nil })
	buf := &counted{max: max}
	buf.Grow(min(max, n/8+512))
	w, err := gzipWriter(buf, gzip.DefaultCompression)
	if err != nil {
		return nil, 0, err
	}
	defer putGzipWriter(w, gzip.DefaultCompression)
	err = eachOf(fs, func(b []byte) error { _, err := w.Write(b); return err })
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return nil, 0, err
	}
	if buf.n > max {
		return nil, buf.n, nil
	}
	return buf.Bytes(), buf.n, nil
}

// restCache keeps the last two remainders compressed, by the key of their JSON.
type restCache struct {
	kept recent[[sha256.Size]byte, []byte]
}

// compress is compress of fs, kept by c, which may be nil.
func (c *restCache) compress(fs []field, max int) ([]byte, int, error) {
	if c == nil {
		return compress(fs, max)
	}
	key := keyOf(fs)
	if z, ok := c.kept.get(key); ok {
		if len(z) > max {
			return nil, len(z), nil
		}
		return z, len(z), nil
	}
	z, size, err := compress(fs, max)
	if err == nil && z != nil {
		c.kept.put(key, z)
	}
	return z, size, err
}

// gzipWriters keep gzip's writers by level (from -1, the default, to 9), each a megabyte of
// compressor state that a write need not allocate anew. A pool is emptied by the garbage
// collections that run between an operation's records; one writer of each level is kept
// through them (gzipKept), so that a process allocates and clears that megabyte once.
var (
	gzipWriters [gzip.BestCompression + 2]sync.Pool
	gzipKept    [gzip.BestCompression + 2]atomic.Pointer[gzip.Writer]
)

// gzipWriter is a gzip writer at level to w.
func gzipWriter(w io.Writer, level int) (*gzip.Writer, error) {
	if level < gzip.DefaultCompression || level > gzip.BestCompression {
		return nil, fmt.Errorf("gzip: invalid compression level: %d", level)
	}
	if z := gzipKept[level+1].Swap(nil); z != nil {
		z.Reset(w)
		return z, nil
	}
	if z, ok := gzipWriters[level+1].Get().(*gzip.Writer); ok {
		z.Reset(w)
		return z, nil
	}
	return gzip.NewWriterLevel(w, level)
}

// putGzipWriter gives z, of level, back to be used again.
func putGzipWriter(z *gzip.Writer, level int) {
	z.Reset(io.Discard)
	if gzipKept[level+1].CompareAndSwap(nil, z) {
		return
	}
	gzipWriters[level+1].Put(z)
}

func gzipBytes(b []byte, level int) ([]byte, error) {
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// magicGzip starts every gzip stream.
var magicGzip = []byte{0x1f, 0x8b, 0x08}

// decode decodes a record object's data as Helm's drivers do: base64, then gunzip when it is
// gzipped (Helm's oldest records are not), then JSON, streaming it within e; object names the
// record object in errors.
func decode(ctx context.Context, e Expansion, object string, data []byte) (*Release, error) {
	b := make([]byte, base64.StdEncoding.DecodedLen(len(data)))
	n, err := base64.StdEncoding.Decode(b, data)
	if err != nil {
		return nil, err
	}
	var rel Release
	if err := e.decodeJSON(ctx, object, "record", b[:n], &rel); err != nil {
		return nil, err
	}
	return &rel, nil
}

// partsOf parses the PartsAnnotation value s: the number of parts and their sha256.
func partsOf(s string) (count int, sum string, err error) {
	c, sum, ok := strings.Cut(s, "/")
	if !ok {
		return 0, "", fmt.Errorf("%s %q: want COUNT/SHA256", PartsAnnotation, s)
	}
	count, err = strconv.Atoi(c)
	if err != nil || count < 1 || count > MaxRecordSize/MaxObjectData+1 {
		return 0, "", fmt.Errorf("%s %q: the count must be 1 to %d", PartsAnnotation, s, MaxRecordSize/MaxObjectData+1)
	}
	if b, err := hex.DecodeString(sum); err != nil || len(b) != sha256.Size {
		return 0, "", fmt.Errorf("%s %q: the sum must be a sha256 in hex", PartsAnnotation, s)
	}
	return count, sum, nil
}

// recordParts says whether the record object it has parts, and which: by its PartsAnnotation,
// or, when Helm's driver rewrote the object and dropped its annotations, by its PartsLabel. A
// PartsLabel that names another revision was copied from that revision's record by helm: the
// object holds its whole record.
func recordParts(it *item) (count int, sum string, ok bool, err error) {
	if ann := it.annotations[PartsAnnotation]; ann != "" {
		count, sum, err = partsOf(ann)
		return count, sum, true, err
	}
	l := it.labels[PartsLabel]
	if l == "" {
		return 0, "", false, nil
	}
	version, rest, _ := strings.Cut(l, ".")
	if version != strconv.Itoa(it.version) {
		return 0, "", false, nil
	}
	c, sum, _ := strings.Cut(rest, ".")
	count, err = strconv.Atoi(c)
	if err != nil || count < 1 || count > MaxRecordSize/MaxObjectData+1 {
		return 0, "", true, fmt.Errorf("%s %q: the count must be 1 to %d", PartsLabel, l, MaxRecordSize/MaxObjectData+1)
	}
	if _, err := hex.DecodeString(sum); err != nil || len(sum) != labelSum {
		return 0, "", true, fmt.Errorf("%s %q: the sum must be %d hex digits", PartsLabel, l, labelSum)
	}
	return count, sum, true, nil
}

// join puts back into rel, read from a record object, what moved to its parts: parts are the
// parts' contents in order, whose sha256 must be sum or start with it.
func join(ctx context.Context, e Expansion, object string, rel *Release, parts [][]byte, sum string) error {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
	}
	if got := hex.EncodeToString(h.Sum(nil)); len(sum) < labelSum || !strings.HasPrefix(got, sum) {
		return fmt.Errorf("the parts' sha256 is %s, the record says %s", got, sum)
	}
	var rest remainder
	if err := e.decodeJSONOf(ctx, object, "record parts", parts, &rest); err != nil {
		return err
	}
	if rel.Chart == nil {
		rel.Chart = &chartv2.Chart{}
	}
	rel.Chart.Templates, rel.Chart.Files = rest.Templates, rest.Files
	if rest.Manifest != nil {
		rel.Manifest = *rest.Manifest
	}
	return nil
}

// partName is the name of part i (from 0) of the parts with sha256 sum of the record object
// named key.
func partName(key, sum string, i int) string {
	return fmt.Sprintf("%s.%s.%d", key, sum[:10], i)
}

// Fits returns a *TooLargeError when the record of rel cannot be stored, even with its chart and
// manifest in parts, and nil when it can: what an operation checks before anything changes. A
// record whose JSON fits in an object uncompressed is not encoded to know it; one that does not
// is encoded once, for Fits and the write that follows.
func (c *Encoder) Fits(rel *Release) error {
	if c == nil {
		c = NewEncoder()
	}
	j, err := c.json.recordJSON(rel)
	if err != nil {
		return err
	}
	if alwaysFits(j.size(), MaxObjectData) {
		return nil
	}
	if bulk(rel) > bulky {
		defer c.bulky.Hold()()
	}
	_, err = c.encodeJSON(rel, j)
	return err
}
