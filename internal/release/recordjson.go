package release

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// A record's JSON is what json.Marshal makes of the release, byte for byte, but it is assembled
// from its top-level fields, each marshalled alone, in the order and with the omitempty rules of
// releasev1.Release. The bulk of a record is its chart's templates and files and its manifest,
// and they are the same in every record an operation writes (its check, its pending record, its
// deployed one): their JSON is made once and kept by the Encoder, and a record is written into
// gzip piece by piece, never whole.

// piece is a run of a record's JSON. A bulky piece (its chart's templates or files, its
// manifest) is known by its sum, of what it is made of, where another is known by its bytes.
type piece struct {
	b []byte
	// tag, when not 0, says which bulky piece it is ('T' templates, 'F' files, 'M' manifest),
	// and sum is the sha256 of what it is made of.
	tag byte
	sum *[sha256.Size]byte
}

// field is a top-level field of a record's JSON: `"name":` and its value, in pieces; nil
// pieces when omitempty leaves it out.
type field struct {
	name   string
	pieces []piece
}

// The fields of releasev1.Release, in its order (Labels is json:"-").
const (
	fName = iota
	fInfo
	fChart
	fConfig
	fManifest
	fHooks
	fVersion
	fNamespace
	fApplyMethod
	fields
)

var fieldNames = [fields]string{`"name":`, `"info":`, `"chart":`, `"config":`, `"manifest":`, `"hooks":`, `"version":`, `"namespace":`, `"apply_method":`}

// recordJSON is the JSON of a record, in its fields.
type recordJSON struct {
	f [fields]field
}

// each calls fn with each run of j's bytes, in order, until fn fails.
func (j *recordJSON) each(fn func([]byte) error) error {
	return eachOf(j.f[:], fn)
}

// eachOf calls fn with each run of the bytes of the JSON object of fields fs, in order.
func eachOf(fs []field, fn func([]byte) error) error {
	var head [32]byte
	sep := byte('{')
	for _, f := range fs {
		if f.pieces == nil {
			continue
		}
		if err := fn(append(append(head[:0], sep), f.name...)); err != nil {
			return err
		}
		sep = ','
		for _, p := range f.pieces {
			if err := fn(p.b); err != nil {
				return err
			}
		}
	}
	if sep == '{' {
		return fn([]byte("{}"))
	}
	return fn([]byte("}"))
}

// size is how many bytes j's JSON takes.
func (j *recordJSON) size() int {
	n := 0
	_ = j.each(func(b []byte) error { n += len(b); return nil })
	return n
}

// writeTo writes j's JSON to w.
func (j *recordJSON) writeTo(w io.Writer) error {
	return j.each(func(b []byte) error { _, err := w.Write(b); return err })
}

// bytes is j's JSON whole.
func (j *recordJSON) bytes() []byte {
	out := make([]byte, 0, j.size())
	_ = j.each(func(b []byte) error { out = append(out, b...); return nil })
	return out
}

// key identifies j's JSON: two records of the same key have the same JSON. A bulky piece counts
// by its sum, the rest by its bytes.
func (j *recordJSON) key() [sha256.Size]byte {
	return keyOf(j.f[:])
}

// keyOf identifies the JSON object of fields fs, as key does.
func keyOf(fs []field) [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	for _, f := range fs {
		if f.pieces == nil {
			continue
		}
		h.Write([]byte(f.name))
		for _, p := range f.pieces {
			if p.tag != 0 {
				h.Write([]byte{p.tag})
				h.Write(p.sum[:])
				continue
			}
			h.Write([]byte{0})
			binary.LittleEndian.PutUint64(n[:], uint64(len(p.b)))
			h.Write(n[:])
			h.Write(p.b)
		}
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// withoutFiles is j with its chart's templates and files null, as the record object of a split
// record holds it.
func (j *recordJSON) withoutFiles() *recordJSON {
	out := *j
	out.f[fChart].pieces = replaced(j.f[fChart].pieces, 'T', null)
	out.f[fChart].pieces = replaced(out.f[fChart].pieces, 'F', null)
	return &out
}

// withManifest is j with its manifest replaced by the JSON m.
func (j *recordJSON) withManifest(m []byte) *recordJSON {
	out := *j
	out.f[fManifest].pieces = []piece{{b: m}}
	return &out
}

// remainder is the JSON of what moves out of j's record object to its parts: its chart's
// templates and files, and its manifest when withManifest.
func (j *recordJSON) remainder(withManifest bool) []field {
	templates, files := []piece{{b: null}}, []piece{{b: null}}
	for _, p := range j.f[fChart].pieces {
		switch p.tag {
		case 'T':
			templates = []piece{p}
		case 'F':
			files = []piece{p}
		}
	}
	fs := []field{{name: `"templates":`, pieces: templates}, {name: `"files":`, pieces: files}}
	if withManifest {
		m := j.f[fManifest].pieces
		if m == nil {
			m = []piece{{b: []byte(`""`)}}
		}
		fs = append(fs, field{name: `"manifest":`, pieces: m})
	}
	return fs
}

var null = []byte("null")

func replaced(ps []piece, tag byte, b []byte) []piece {
	out := make([]piece, len(ps))
	for i, p := range ps {
		if p.tag == tag {
			p = piece{b: b}
		}
		out[i] = p
	}
	return out
}

// jsonCache keeps the JSON of the bulky parts of the records an Encoder encoded last: of two
// charts' templates and files, known by the sha256 of their contents, and of two manifests,
// known by the string itself (a string never changes, and the one kept is compared, mostly by
// its address). Two of each: an upgrade writes its new revision's record and rewrites the one it
// supersedes, in turn.
type jsonCache struct {
	files     recent[[sha256.Size]byte, *filesJSON]
	manifests recent[string, *manifestJSON]
}

type filesJSON struct {
	sum                   [sha256.Size]byte
	templates, filesBytes []byte
}

type manifestJSON struct {
	sum  [sha256.Size]byte
	json []byte
}

// recordJSON is rel's JSON, in its fields, as json.Marshal(rel) makes it.
func (c *jsonCache) recordJSON(rel *Release) (*recordJSON, error) {
	j := &recordJSON{}
	for i := range j.f {
		j.f[i].name = fieldNames[i]
	}
	var err error
	if rel.Name != "" {
		j.f[fName].pieces, err = marshalled(rel.Name, err)
	}
	if rel.Info != nil {
		j.f[fInfo].pieces, err = marshalled(rel.Info, err)
	}
	if rel.Chart != nil && err == nil {
		j.f[fChart].pieces, err = c.chart(rel.Chart)
	}
	if len(rel.Config) > 0 {
		j.f[fConfig].pieces, err = marshalled(rel.Config, err)
	}
	if rel.Manifest != "" {
		j.f[fManifest].pieces = c.manifest(rel.Manifest)
	}
	if len(rel.Hooks) > 0 {
		j.f[fHooks].pieces, err = marshalled(rel.Hooks, err)
	}
	if rel.Version != 0 {
		j.f[fVersion].pieces = []piece{{b: strconv.AppendInt(nil, int64(rel.Version), 10)}}
	}
	if rel.Namespace != "" {
		j.f[fNamespace].pieces, err = marshalled(rel.Namespace, err)
	}
	if rel.ApplyMethod != "" {
		j.f[fApplyMethod].pieces, err = marshalled(rel.ApplyMethod, err)
	}
	if err != nil {
		return nil, err
	}
	return j, nil
}

// marshalled is v's JSON as one piece, unless err is set already.
func marshalled(v any, err error) ([]piece, error) {
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	return []piece{{b: b}}, err
}

// chart is the JSON of ch in pieces, in the order of chartv2.Chart's fields: its templates and
// files from the cache when it holds them.
func (c *jsonCache) chart(ch *chartv2.Chart) ([]piece, error) {
	f, err := c.filesOf(ch)
	if err != nil {
		return nil, err
	}
	var head, mid, tail []byte
	add := func(to *[]byte, name string, v any) {
		if err != nil {
			return
		}
		var b []byte
		if b, err = json.Marshal(v); err == nil {
			*to = append(append(*to, name...), b...)
		}
	}
	add(&head, `{"metadata":`, ch.Metadata)
	add(&head, `,"lock":`, ch.Lock)
	head = append(head, `,"templates":`...)
	add(&mid, `,"values":`, ch.Values)
	add(&mid, `,"schema":`, ch.Schema)
	add(&mid, `,"schemamodtime":`, ch.SchemaModTime)
	mid = append(mid, `,"files":`...)
	if !ch.ModTime.IsZero() {
		add(&tail, `,"modtime":`, ch.ModTime)
	}
	tail = append(tail, '}')
	if err != nil {
		return nil, err
	}
	return []piece{{b: head}, {b: f.templates, tag: 'T', sum: &f.sum}, {b: mid}, {b: f.filesBytes, tag: 'F', sum: &f.sum}, {b: tail}}, nil
}

// filesOf is the JSON of ch's templates and files.
func (c *jsonCache) filesOf(ch *chartv2.Chart) (*filesJSON, error) {
	sum := filesSum(ch)
	if f, ok := c.files.get(sum); ok {
		return f, nil
	}
	t, err := filesJSONOf(ch.Templates)
	if err != nil {
		return nil, err
	}
	fs, err := filesJSONOf(ch.Files)
	if err != nil {
		return nil, err
	}
	f := &filesJSON{sum: sum, templates: t, filesBytes: fs}
	c.files.put(sum, f)
	return f, nil
}

// filesJSONOf is json.Marshal of files, written into one buffer sized for it: json.Marshal's own
// grows from nothing, and is copied once more, for megabytes of files in base64.
func filesJSONOf(files []*common.File) ([]byte, error) {
	if files == nil {
		return []byte("null"), nil
	}
	size := 2
	for _, f := range files {
		if f != nil {
			size += len(`{"name":,"data":"","modtime":""},`) + len(f.Name) + len(f.Name)/8 + 2 +
				base64.StdEncoding.EncodedLen(len(f.Data)) + len(time.RFC3339Nano)
		}
	}
	b := append(make([]byte, 0, size), '[')
	for i, f := range files {
		if i > 0 {
			b = append(b, ',')
		}
		if f == nil {
			b = append(b, null...)
			continue
		}
		b = appendJSONString(append(b, `{"name":`...), f.Name)
		b = append(b, `,"data":`...)
		if f.Data == nil {
			b = append(b, null...)
		} else {
			b = append(base64.StdEncoding.AppendEncode(append(b, '"'), f.Data), '"')
		}
		if !f.ModTime.IsZero() {
			t, err := f.ModTime.MarshalJSON()
			if err != nil {
				return nil, fmt.Errorf("json: error calling MarshalJSON for type time.Time: %w", err)
			}
			b = append(append(b, `,"modtime":`...), t...)
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// filesSum is the sha256 of ch's templates and files: whether each list and each file is nil,
// and each file's name, time and data.
func filesSum(ch *chartv2.Chart) [sha256.Size]byte {
	h := sha256.New()
	var n [8]byte
	put := func(b []byte) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, list := range [][]*common.File{ch.Templates, ch.Files} {
		if list == nil {
			h.Write([]byte{'n'})
			continue
		}
		binary.LittleEndian.PutUint64(n[:], uint64(len(list)))
		h.Write(append([]byte{'l'}, n[:]...))
		for _, f := range list {
			if f == nil {
				h.Write([]byte{'n'})
				continue
			}
			h.Write([]byte{'f'})
			put([]byte(f.Name))
			// Its JSON, unquoted: the same text is the same instant, offset and JSON.
			put(f.ModTime.AppendFormat(nil, time.RFC3339Nano))
			put(f.Data)
		}
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// manifest is the JSON of the manifest m, as one piece.
func (c *jsonCache) manifest(m string) []piece {
	if k, ok := c.manifests.get(m); ok {
		return []piece{{b: k.json, tag: 'M', sum: &k.sum}}
	}
	// A manifest takes a few percent more in JSON: a newline is two bytes.
	b := appendJSONString(make([]byte, 0, len(m)+len(m)/8+2), m)
	k := &manifestJSON{sum: sha256.Sum256(b), json: b}
	c.manifests.put(m, k)
	return []piece{{b: k.json, tag: 'M', sum: &k.sum}}
}

// appendJSONString appends s to dst as json.Marshal writes a string, escapes of HTML's
// characters, of invalid UTF-8 and of U+2028 and U+2029 included, into a buffer the caller
// sizes: json.Marshal's own grows from nothing and is copied once more. Tests compare the two.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
