package state

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// Limits are the reader's caps. A state beyond them is reported corrupt,
// never read in part.
type Limits struct {
	// MaxChunks is the most Secrets a state may span.
	MaxChunks int
	// MaxDecompressedBytes is the most bytes the gzip stream may expand to.
	MaxDecompressedBytes int64
	// MaxOutputBytes is the most bytes one output's value (and its type)
	// may take, MaxOutputsBytes the most all outputs together may: the
	// outputs are the only part of a state the reader keeps, so these
	// bound what a read holds, whatever the state expands to.
	MaxOutputBytes  int
	MaxOutputsBytes int
}

// DefaultLimits are the book's caps, 32 chunks and 64 MiB decompressed, and
// the outputs' caps: 1 MiB an output and 4 MiB in all. An output CAPTF
// consumes feeds a Job's inputs, which are capped at 1,000,000 bytes, so no
// output over 1 MiB could ever be used.
var DefaultLimits = Limits{MaxChunks: 32, MaxDecompressedBytes: 64 << 20, MaxOutputBytes: 1 << 20, MaxOutputsBytes: 4 << 20}

// withDefaults fills every unset limit from DefaultLimits.
func (l Limits) withDefaults() Limits {
	if l.MaxChunks <= 0 {
		l.MaxChunks = DefaultLimits.MaxChunks
	}
	if l.MaxDecompressedBytes <= 0 {
		l.MaxDecompressedBytes = DefaultLimits.MaxDecompressedBytes
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = DefaultLimits.MaxOutputBytes
	}
	if l.MaxOutputsBytes <= 0 {
		l.MaxOutputsBytes = DefaultLimits.MaxOutputsBytes
	}
	return l
}

// Output is one root-module output as the state records it. Value is the raw
// JSON value; decoding it against the module contract is the caller's job.
// Output values may be sensitive: an Output formats and logs as a
// placeholder, never its value.
type Output struct {
	// Value is the output's value as raw JSON.
	Value json.RawMessage
	// Type is the output's type constraint as raw JSON (for example
	// "string" or ["list","string"]), if the state records one.
	Type json.RawMessage
	// Sensitive is the output's sensitive flag.
	Sensitive bool
}

// String hides the value.
func (o Output) String() string {
	if o.Sensitive {
		return "Output(sensitive, redacted)"
	}
	return "Output(redacted)"
}

// GoString hides the value from %#v too.
func (o Output) GoString() string { return o.String() }

// MarshalLog keeps the value out of structured logs.
func (o Output) MarshalLog() any { return o.String() }

// Outputs are the root module's outputs by name.
type Outputs map[string]Output

// String lists the output names only.
func (o Outputs) String() string { return fmt.Sprintf("Outputs%v", o.Names()) }

// GoString hides the values from %#v too.
func (o Outputs) GoString() string { return o.String() }

// MarshalLog keeps the values out of structured logs.
func (o Outputs) MarshalLog() any { return o.Names() }

// Names returns the output names, sorted.
func (o Outputs) Names() []string {
	names := make([]string, 0, len(o))
	for n := range o {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Content is what CAPTF reads from a state file, and nothing more.
type Content struct {
	// Serial is the state's serial.
	Serial uint64
	// Lineage is the state's lineage.
	Lineage string
	// RuntimeVersion is the Terraform or OpenTofu version that wrote the
	// state (terraform_version in the file).
	RuntimeVersion string
	// Outputs are the root module's outputs.
	Outputs Outputs
	// ManagedResources counts managed resources (not data sources); a
	// resource with count or for_each counts once.
	ManagedResources int
	// CompressedBytes is the size of the concatenated gzip payload.
	CompressedBytes int64
	// DecompressedBytes is the size of the state JSON.
	DecompressedBytes int64
	// Digest is "sha256:<hex>" of the concatenated gzip payload.
	Digest string
}

// supportedVersion is the only state file format CAPTF reads.
const supportedVersion = 4

var errCapExceeded = errors.New("decompressed size cap exceeded")

// gzipFailure marks an error that came out of the gzip reader.
type gzipFailure struct{ err error }

func (g *gzipFailure) Error() string { return g.err.Error() }
func (g *gzipFailure) Unwrap() error { return g.err }

// capReader passes through at most max bytes of the gzip stream and fails
// once the stream tries to give more, so a gzip bomb never expands past the
// cap. It tags gzip errors so they are told apart from JSON errors.
type capReader struct {
	r   io.Reader
	n   int64
	max int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n > c.max {
		return 0, errCapExceeded
	}
	if room := c.max - c.n + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		return 0, errCapExceeded
	}
	if err != nil && !errors.Is(err, io.EOF) {
		err = &gzipFailure{err}
	}
	return n, err
}

// Decode reads a state from its chunk payloads, in chunk order: it
// concatenates them, gunzips the result as one stream under the limits and
// parses the fields CAPTF needs. Failures are *ReadError values; nothing is
// returned from a state that cannot be read whole.
func Decode(payloads [][]byte, lim Limits) (*Content, error) {
	return decode(payloads, lim, "")
}

func decode(payloads [][]byte, lim Limits, base string) (*Content, error) {
	lim = lim.withDefaults()
	if len(payloads) == 0 {
		return nil, ErrNotFound
	}
	if len(payloads) > lim.MaxChunks {
		return nil, readErrorf(ErrTooManyChunks, base, "%d chunks, at most %d are read", len(payloads), lim.MaxChunks)
	}
	var compressed int64
	h := sha256.New()
	readers := make([]io.Reader, len(payloads))
	for i, p := range payloads {
		compressed += int64(len(p))
		h.Write(p)
		readers[i] = bytes.NewReader(p)
	}
	content := &Content{
		CompressedBytes: compressed,
		Digest:          "sha256:" + hex.EncodeToString(h.Sum(nil)),
	}

	zr, err := gzip.NewReader(io.MultiReader(readers...))
	if err != nil {
		return nil, gzipError(err, len(payloads), base)
	}
	cr := &capReader{r: zr, max: lim.MaxDecompressedBytes}
	sc := newScanner(cr)
	f, err := parseStateJSON(sc, lim)
	if err != nil {
		var gz *gzipFailure
		var big *outputTooLarge
		switch {
		case errors.As(err, &big):
			return nil, readErrorf(ErrTooLarge, base, "%s", big)
		case errors.Is(err, errCapExceeded):
			return nil, readErrorf(ErrTooLarge, base, "more than %d bytes decompressed", lim.MaxDecompressedBytes)
		case errors.As(err, &gz):
			return nil, gzipError(gz.err, len(payloads), base)
		default:
			return nil, newReadError(ErrJSON, base, "", err)
		}
	}
	content.DecompressedBytes = cr.n
	switch {
	case f.encrypted:
		return nil, readErrorf(ErrEncrypted, base, "OpenTofu encryption envelope %s; reading encrypted state is not supported", f.encryptionVersion)
	case !f.haveVersion:
		return nil, readErrorf(ErrUnsupportedVersion, base, "the state has no version field")
	case f.version != supportedVersion:
		return nil, readErrorf(ErrUnsupportedVersion, base, "version %s, only %d is read", f.versionText, supportedVersion)
	case !f.haveSerial:
		return nil, readErrorf(ErrJSON, base, "the state has no serial")
	case f.lineage == "":
		return nil, readErrorf(ErrJSON, base, "the state has no lineage")
	}
	content.Serial = f.serial
	content.Lineage = f.lineage
	content.RuntimeVersion = f.runtimeVersion
	content.Outputs = f.outputs
	if content.Outputs == nil {
		content.Outputs = Outputs{}
	}
	content.ManagedResources = f.managed
	return content, nil
}

// gzipError classifies a gzip failure: a chunked set whose stream ends early
// is missing its tail (inconsistent, possibly mid-write); anything else is
// corrupt.
func gzipError(err error, chunks int, base string) error {
	if chunks > 1 && (errors.Is(err, io.ErrUnexpectedEOF)) {
		return newReadError(ErrTruncatedSet, base, fmt.Sprintf("%d chunks present", chunks), err)
	}
	return newReadError(ErrGzip, base, "", err)
}

// stateFields are the parts of a state (or encryption envelope) CAPTF reads.
type stateFields struct {
	haveVersion       bool
	version           int64
	versionText       string
	runtimeVersion    string
	haveSerial        bool
	serial            uint64
	lineage           string
	outputs           Outputs
	managed           int
	encrypted         bool
	encryptionVersion string
	// outputMax caps one output, outputsMax all of them; outputsLeft is
	// what the outputs read so far leave of outputsMax.
	outputMax, outputsMax, outputsLeft int
}

// parseStateJSON walks the top-level object of a state file (v4, or
// OpenTofu's encryption envelope) and the whole stream after it.
func parseStateJSON(sc *scanner, lim Limits) (*stateFields, error) {
	f := &stateFields{outputMax: lim.MaxOutputBytes, outputsMax: lim.MaxOutputsBytes, outputsLeft: lim.MaxOutputsBytes}
	c, err := sc.next()
	if err != nil {
		return nil, err
	}
	if c != '{' {
		return nil, sc.syntax("the state is not a JSON object")
	}
	err = sc.object(func(name []byte, ok bool) error {
		if !ok {
			return sc.skipValue(1)
		}
		switch string(name) {
		case "version":
			raw, err := sc.captureNumber()
			if err != nil {
				return err
			}
			f.haveVersion = true
			f.versionText = string(raw)
			v, perr := strconv.ParseInt(string(raw), 10, 64)
			if perr != nil {
				f.version = -1
			} else {
				f.version = v
			}
			return nil
		case "terraform_version":
			v, err := sc.stringField("terraform_version")
			f.runtimeVersion = v
			return err
		case "serial":
			raw, err := sc.captureNumber()
			if err != nil {
				return err
			}
			v, perr := strconv.ParseUint(string(raw), 10, 64)
			if perr != nil {
				return sc.syntax("serial %s is not a non-negative integer", raw)
			}
			f.serial, f.haveSerial = v, true
			return nil
		case "lineage":
			v, err := sc.stringField("lineage")
			f.lineage = v
			return err
		case "outputs":
			return parseOutputs(sc, f)
		case "resources":
			return parseResources(sc, f)
		case "encryption_version":
			v, err := sc.stringField("encryption_version")
			if v != "" {
				f.encrypted = true
				f.encryptionVersion = strconv.Quote(v)
			}
			return err
		default:
			return sc.skipValue(1)
		}
	})
	if err != nil {
		return nil, err
	}
	if err := sc.atEnd(); err != nil {
		return nil, err
	}
	return f, nil
}

// stringField reads a short string field; null reads as "".
func (s *scanner) stringField(name string) (string, error) {
	v, err := s.nameField(name)
	return string(v), err
}

// nameField reads a short string field into scratch space (see readName);
// null reads as empty.
func (s *scanner) nameField(name string) ([]byte, error) {
	if null, err := s.isNull(); err != nil || null {
		return nil, err
	}
	v, ok, err := s.readName()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, s.syntax("field %s is longer than %d bytes", name, maxNameLen)
	}
	return v, nil
}

// captureNumber reads a number and returns its text.
func (s *scanner) captureNumber() ([]byte, error) {
	c, err := s.next()
	if err != nil {
		return nil, err
	}
	if c != '-' && (c < '0' || c > '9') {
		return nil, s.syntax("expected a number")
	}
	s.startCapture(64)
	if err := s.skipNumber(); err != nil {
		s.capturing = false
		s.capBuf = nil
		return nil, err
	}
	raw := s.endCapture()
	if raw == nil {
		return nil, s.syntax("number too long")
	}
	return raw, nil
}

// outputTooLarge is an output whose value passed the reader's caps; it
// names the output and the cap, never the value.
type outputTooLarge struct {
	name  string
	limit int
	total bool
}

func (o *outputTooLarge) Error() string {
	if o.total {
		return fmt.Sprintf("the outputs up to %q take more than %d bytes together, at most %d are read", o.name, o.limit, o.limit)
	}
	return fmt.Sprintf("output %q takes more than %d bytes, at most %d are read", o.name, o.limit, o.limit)
}

// parseOutputs reads "outputs": {"<name>": {"value": …, "type": …,
// "sensitive": bool}}, keeping each output's value and type within
// f.outputMax bytes and all of them within what f.outputsLeft allows.
func parseOutputs(sc *scanner, f *stateFields) error {
	f.outputs = Outputs{}
	return sc.object(func(rawName []byte, ok bool) error {
		if !ok {
			return sc.syntax("an output name is longer than %d bytes", maxNameLen)
		}
		name := string(rawName)
		var out Output
		used := 0
		capture := func() (json.RawMessage, error) {
			limit, total := f.outputMax-used, false
			if f.outputsLeft < limit {
				limit, total = f.outputsLeft, true
			}
			v, fits, err := sc.captureValueWithin(limit)
			if err != nil {
				return nil, err
			}
			if !fits {
				if total {
					return nil, &outputTooLarge{name: name, limit: f.outputsMax, total: true}
				}
				return nil, &outputTooLarge{name: name, limit: f.outputMax}
			}
			used += len(v)
			f.outputsLeft -= len(v)
			return v, nil
		}
		err := sc.object(func(field []byte, _ bool) error {
			switch string(field) {
			case "value":
				v, err := capture()
				out.Value = v
				return err
			case "type":
				v, err := capture()
				out.Type = v
				return err
			case "sensitive":
				c, err := sc.next()
				if err != nil {
					return err
				}
				switch c {
				case 't':
					out.Sensitive = true
					return sc.skipLiteral("true")
				case 'f':
					out.Sensitive = false
					return sc.skipLiteral("false")
				case 'n':
					return sc.skipLiteral("null")
				}
				return sc.syntax("output sensitive flag is not a boolean")
			default:
				return sc.skipValue(2)
			}
		})
		if err != nil {
			return err
		}
		f.outputs[name] = out
		return nil
	})
}

// parseResources counts the managed resources of "resources": [{"mode":
// "managed", …, "instances": […]}], skipping everything else unread.
func parseResources(sc *scanner, f *stateFields) error {
	return sc.array(func() error {
		managed := false
		err := sc.object(func(field []byte, _ bool) error {
			if string(field) != "mode" {
				return sc.skipValue(2)
			}
			v, err := sc.nameField("mode")
			managed = string(v) == "managed"
			return err
		})
		if managed {
			f.managed++
		}
		return err
	})
}
