package timeline

import (
	_ "embed"
	"fmt"
	"slices"

	"github.com/klauspost/compress/zstd"
)

// What the timeline keeps compressed, it compresses with zstd against the
// dormant dictionary: a dormant group's report and view (dormant.go,
// newDormantEncoder) and a group's frozen generations (frozen.go,
// zstdFrozen), whose reports and views repeat the same field names.

// zstdFrozen compresses frozen blocks, against the dormant dictionary. A
// group's block is written again at each generation it freezes, so one
// encoder is kept, at the fastest level (EncodeAll may be used by many
// goroutines at once).
var zstdFrozen = newEncoder(zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(1<<20))

// dormantDict is the timeline's zstd dictionary, raw content: the report's
// and the view's JSON of a short-lived group of the synth mix, as a
// dormant frame holds them (TestDormantDict writes it). Dormant frames and
// frozen blocks refer to it for the field names and the shape every
// group's and generation's JSON repeats. Frames are never written
// anywhere, so a new dictionary needs no care for frames of the old.
//
//go:embed dormant.dict
var dormantDict []byte

// dormantDictID names dormantDict in the frames written with it: in the
// range zstd leaves to private dictionaries (32768 to 2^31-1), under
// 65536 to take two bytes of a frame's header.
const dormantDictID = 0xeb70

// newEncoder is an encoder of one goroutine at a time against the dormant
// dictionary, with opts.
func newEncoder(opts ...zstd.EOption) *zstd.Encoder {
	opts = append(opts, zstd.WithEncoderConcurrency(1), zstd.WithEncoderDictRaw(dormantDictID, dormantDict))
	enc, err := zstd.NewWriter(nil, opts...)
	if err != nil {
		panic(fmt.Sprintf("timeline: make a zstd encoder: %v", err)) // constant options
	}
	return enc
}

// newDormantEncoder is an encoder of dormant groups' frames, at zstd's
// "better" level, against the dormant dictionary. It holds about 8.5 MB
// (its tables and their copy primed with the dictionary) and takes
// milliseconds to make: Retain makes one for the groups that fall asleep
// at once, and drops it after, as a group sleeps once and an encoder kept
// would hold more than the frames of four thousand groups.
func newDormantEncoder() *zstd.Encoder {
	return newEncoder(zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithWindowSize(1<<17), zstd.WithLowerEncoderMem(true))
}

// zstdDec decompresses dormant groups' frames and frozen blocks; many
// goroutines may use it at once (DecodeAll). A frame names its
// dictionary.
var zstdDec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderDictRaw(dormantDictID, dormantDict))

// compress is b compressed by enc into one frame, kept at its own length:
// EncodeAll's buffer grows by doubling, and its spare capacity would be
// held as long as the group.
func compress(enc *zstd.Encoder, b []byte) []byte {
	return slices.Clone(enc.EncodeAll(b, make([]byte, 0, len(b)/4)))
}

// decompress is z, a frame written by EncodeAll, decompressed into dst
// when it has room for the frame's content, else into a new slice of the
// content's size.
func decompress(z, dst []byte) ([]byte, error) {
	var h zstd.Header
	_ = h.Decode(z) // written by EncodeAll, with the content's size
	return zstdDec.DecodeAll(z, grow(dst, int(h.FrameContentSize)))
}

// grow is b emptied, with room for n bytes: b itself when it has, else a
// new slice.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, 0, n)
	}
	return b[:0]
}
