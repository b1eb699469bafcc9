package decode

import (
	"encoding/base64"
	"fmt"
)

// TopicID is a KIP-516 topic id. It renders as Kafka renders a Uuid: 22
// characters of URL-safe base64 without padding, as kafka-topics.sh prints
// it. The zero id renders as "AAAAAAAAAAAAAAAAAAAAAA".
type TopicID [16]byte

// String returns the id in Kafka's base64 form.
func (id TopicID) String() string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// IsZero reports whether the id is all zeros (no id: before Metadata v10,
// OffsetCommit v10, OffsetFetch v10).
func (id TopicID) IsZero() bool { return id == TopicID{} }

// MarshalText renders the id in Kafka's base64 form.
func (id TopicID) MarshalText() ([]byte, error) {
	return []byte(id.String()), nil
}

// UnmarshalText parses Kafka's base64 form.
func (id *TopicID) UnmarshalText(b []byte) error {
	var raw [16]byte
	n, err := base64.RawURLEncoding.Decode(raw[:], b)
	if err != nil || n != len(raw) || len(b) != base64.RawURLEncoding.EncodedLen(len(raw)) {
		return fmt.Errorf("decode: topic id %q: not 22 characters of URL-safe base64", b)
	}
	*id = raw
	return nil
}
