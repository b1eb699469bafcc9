package capture

import (
	"encoding/binary"
	"time"
)

// frameReader cuts one direction of a Kafka connection into frames (a
// 4-byte size, then that many bytes). For each frame it reads the first
// bytes (headerLen of them after the size), asks its owner how much of the
// frame to keep, keeps that prefix in a buffer of its own and skips the
// rest, without copying it: Produce and Fetch payload only moves a count.
//
// A frameReader in sync knows where the next frame starts. It starts out
// of sync when the capture began after the connection did, and falls out
// of sync when a gap swallows a frame boundary or a frame's header is not
// plausible; out of sync, it looks for a frame only at the start of a TCP
// segment, and its owner says whether what is there is plausibly one.
type frameReader struct {
	synced bool
	// headerLen is how many bytes of a frame, after its size, the owner
	// reads to decide how much to keep.
	headerLen int

	head  [4 + maxHeaderLen]byte // the size and the frame's first bytes
	headN int
	size  int // of the frame being read, after its 4-byte size
	got   int // bytes of the frame read, head included
	keep  []byte
	// keepN is how many bytes of the frame are kept; damaged says a gap
	// fell in the kept bytes.
	keepN   int
	damaged bool
	at      time.Time // when the frame's first byte was captured
	owner   frameOwner
}

// maxHeaderLen bounds frameReader.headerLen.
const maxHeaderLen = 8

// frameOwner is what a frameReader reports to: the requests or the
// responses of a connection.
type frameOwner interface {
	// resync says whether b, the start of a TCP segment captured at at
	// while out of sync, plausibly starts a frame.
	resync(b []byte, at time.Time) bool
	// header is a frame's size and first headerLen bytes; it returns how
	// many of the frame's bytes to keep (0 to skip it whole), or false
	// when the header is not plausible: the reader falls out of sync.
	header(size int, head []byte) (keep int, ok bool)
	// frame is a frame read whole: its kept bytes (nil when it kept
	// none), whether a gap fell in them, when its first byte and its last
	// were captured.
	frame(kept []byte, damaged bool, start, end time.Time)
	// lost says that a gap swallowed a frame boundary. known says that
	// the frame it began in had its header read (and lost its end); the
	// frames after it, if any, are unknown.
	lost(known bool)
}

// data reads bytes captured at at; start says they begin a TCP segment.
func (f *frameReader) data(b []byte, at time.Time, start bool) {
	if !f.synced {
		if !start || !f.owner.resync(b, at) {
			return
		}
		f.synced = true
		f.reset()
	}
	for len(b) > 0 && f.synced {
		if f.headN == 0 {
			f.at = at
		}
		if need := 4 + f.headerLen; f.headN < need {
			n := copy(f.head[f.headN:need], b)
			f.headN += n
			b = b[n:]
			if f.headN < need {
				return
			}
			if !f.readHeader() {
				f.synced = false
				return
			}
			if f.headN == 0 {
				continue // a frame of its header alone, handed on
			}
		}
		n := min(len(b), f.size-f.got)
		if f.got < f.keepN {
			f.keep = append(f.keep, b[:min(n, f.keepN-f.got)]...)
		}
		f.got += n
		b = b[n:]
		if f.got == f.size {
			f.endFrame(at)
		}
	}
}

// readHeader reads the size and first bytes of a frame and starts keeping
// what the owner wants kept.
func (f *frameReader) readHeader() bool {
	size := int(int32(binary.BigEndian.Uint32(f.head[:])))
	if size < f.headerLen {
		return false
	}
	keep, ok := f.owner.header(size, f.head[4:4+f.headerLen])
	if !ok {
		return false
	}
	f.size, f.got, f.keepN = size, f.headerLen, min(keep, size)
	if f.keepN > 0 {
		f.keep = make([]byte, 0, f.keepN)
		f.keep = append(f.keep, f.head[4:4+min(f.headerLen, f.keepN)]...)
	}
	if f.got == f.size {
		f.endFrame(f.at)
	}
	return true
}

// endFrame hands on the frame read whole, completed at at.
func (f *frameReader) endFrame(at time.Time) {
	f.owner.frame(f.keep, f.damaged, f.at, at)
	f.reset()
}

// reset prepares for the next frame.
func (f *frameReader) reset() {
	f.headN, f.size, f.got, f.keep, f.keepN, f.damaged = 0, 0, 0, nil, 0, false
}

// gap skips n missing bytes. Inside a frame whose size is known they are
// skipped as its payload would be (a kept frame is damaged); a gap that
// swallows a frame boundary, or the bytes of a header, puts the reader out
// of sync.
func (f *frameReader) gap(n int) {
	if !f.synced {
		return
	}
	if f.headN == 4+f.headerLen && f.size-f.got >= n {
		if f.got < f.keepN {
			f.damaged = true
		}
		f.got += n
		if f.got == f.size {
			// The frame's end time is not known: the gap's bytes were
			// captured, if ever, at some time before the next bytes.
			f.endFrame(f.at)
		}
		return
	}
	f.owner.lost(f.headN == 4+f.headerLen)
	f.synced = false
	f.reset()
}

// cut ends the stream: a frame begun is lost.
func (f *frameReader) cut() {
	if f.synced && f.headN > 0 {
		f.owner.lost(f.headN == 4+f.headerLen)
		f.synced = false
		f.reset()
	}
}
