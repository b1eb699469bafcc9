package timeline

import (
	"slices"

	"github.com/klauspost/compress/zstd"
)

// What the timeline keeps compressed, it compresses with zstd: a dormant
// group's report and view (dormant.go, an encoder made for each group that
// falls asleep) and a group's frozen generations (frozen.go, zstdFrozen).

// zstdFrozen compresses frozen blocks. A group's block is written again
// at each generation it freezes, so one encoder is kept, at the fastest
// level (EncodeAll may be used by many goroutines at once).
var zstdFrozen, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<20))

// zstdDec decompresses dormant groups' frames and frozen blocks; many
// goroutines may use it at once (DecodeAll).
var zstdDec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0))

// compress is b compressed by enc into one frame, kept at its own length:
// EncodeAll's buffer grows by doubling, and its spare capacity would be
// held as long as the group.
func compress(enc *zstd.Encoder, b []byte) []byte {
	return slices.Clone(enc.EncodeAll(b, make([]byte, 0, len(b)/4)))
}

// decompress is z, a frame written by EncodeAll, decompressed into a new
// slice of its content's size.
func decompress(z []byte) ([]byte, error) {
	var h zstd.Header
	_ = h.Decode(z) // written by EncodeAll, with the content's size
	return zstdDec.DecodeAll(z, make([]byte, 0, h.FrameContentSize))
}
