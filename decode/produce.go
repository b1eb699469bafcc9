package decode

import "github.com/twmb/franz-go/pkg/kbin"

// MaxProduceHead bounds how much of a Produce request is read to find its
// acks: a header with the longest client id and the longest transactional
// id (two int16-length strings) fits.
const MaxProduceHead = 2*(1<<15) + 64

// ProduceAcks returns the acks of a Produce request frame (no size prefix),
// given at least the frame's start: a Produce with acks 0 gets no response.
// Only the two fields before acks are read, with kbin: decoding the whole
// request with kmsg would decode its records, which kproxy streams (and a
// capture skips) without ever holding. ok is false when the
// bytes end before acks.
//
// Produce request body: TransactionalID (v3+, nullable string; compact from
// v9, the first flexible version), then Acks int16.
func ProduceAcks(frame []byte) (acks int16, ok bool) {
	h, err := ParseRequestHeader(frame)
	if err != nil {
		return 0, false
	}
	r := kbin.Reader{Src: frame[h.Len:]}
	switch {
	case h.APIVersion >= 9:
		r.CompactNullableString()
	case h.APIVersion >= 3:
		r.NullableString()
	}
	acks = r.Int16()
	return acks, r.Ok()
}
