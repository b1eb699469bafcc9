package timeline

import (
	"encoding/base64"

	"github.com/kproxy-dev/kproxy/decode"
)

// topicNames maps KIP-516 topic ids to names, and names to partition
// counts, from Metadata responses.
type topicNames struct {
	names  map[[16]byte]string
	counts map[string]int32
}

func newTopicNames() topicNames {
	return topicNames{names: map[[16]byte]string{}, counts: map[string]int32{}}
}

func (t topicNames) add(md *decode.Metadata) {
	for _, mt := range md.Topics {
		if mt.ErrorCode != 0 || mt.Name == "" {
			continue
		}
		// The same answers come again and again: a map is written only
		// when it changes (decode's memo often hands the same strings).
		if mt.TopicID != ([16]byte{}) {
			if n, ok := t.names[mt.TopicID]; !ok || n != mt.Name {
				t.names[mt.TopicID] = mt.Name
			}
		}
		if mt.Partitions > 0 && t.counts[mt.Name] != mt.Partitions {
			t.counts[mt.Name] = mt.Partitions
		}
	}
}

// name returns the topic's name, or its id in Kafka's text form (URL-safe
// base64 without padding) and false when no Metadata response named it.
func (t topicNames) name(id [16]byte) (string, bool) {
	if n, ok := t.names[id]; ok {
		return n, true
	}
	return base64.RawURLEncoding.EncodeToString(id[:]), false
}

// topic names a topic carried by name or, from KIP-848 on, by id: the name
// when Metadata gave it, else the id's key (see idKey).
func (t topicNames) topic(name string, id decode.TopicID) string {
	if name != "" || id.IsZero() {
		return name
	}
	if n, ok := t.names[id]; ok {
		return n
	}
	return idKey(id)
}

// resolve turns partitions by topic id into partitions by name.
func (t topicNames) resolve(byID map[[16]byte][]int32) (partitions, []string) {
	if byID == nil {
		return nil, nil
	}
	out := partitions{}
	var unresolved []string
	for id, ps := range byID {
		n, ok := t.name(id)
		if !ok {
			unresolved = append(unresolved, n)
		}
		out.addAll(n, ps)
	}
	return out, unresolved
}
