package provenance

import (
	"bytes"
	"io"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

type ocispecDescriptor = ocispec.Descriptor

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
