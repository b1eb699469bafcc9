package timeline

import (
	"encoding/base64"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// topicNames maps KIP-516 topic ids to names, and names to partition
// counts, from Metadata responses. Retain forgets the topics no answer
// named for the retention age (forget): clusters whose jobs create topics
// without end would otherwise grow it without end.
type topicNames struct {
	names map[[16]byte]string
	// byName is, by topic name, its partition count (0: unknown) and
	// what add last checked of it, so that an answer seen before costs
	// one lookup by name (see add).
	byName map[string]topicInfo
	// namesWrites counts the writes to names.
	namesWrites uint64
}

// topicInfo is what topicNames knows of a topic name.
type topicInfo struct {
	partitions int32 // from the last Metadata answer with a count
	// names[id] was the topic's name when namesWrites was ver: while
	// namesWrites stays ver, an answer naming the topic with id again
	// leaves names as it is.
	id  [16]byte
	ver uint64
	// seen is when an answer last named the topic, to the minute (see
	// add): forget drops the topics unseen for the retention age.
	seen time.Time
}

// seenEvery is how stale topicInfo.seen may be: an answer that changes
// nothing else writes it once a minute at most.
const seenEvery = time.Minute

func newTopicNames() topicNames {
	return topicNames{names: map[[16]byte]string{}, byName: map[string]topicInfo{}}
}

// count is the topic's partition count, 0 when no Metadata answer gave it.
func (t *topicNames) count(name string) int32 {
	return t.byName[name].partitions
}

// add applies a Metadata answer of time at. The same answers come again
// and again: the maps are written only when they change (or a minute after
// the topic was last noted as seen), and an answer's topic that changes
// nothing costs one lookup by name.
func (t *topicNames) add(md *decode.Metadata, at time.Time) {
	for _, mt := range md.Topics {
		if mt.ErrorCode != 0 || mt.Name == "" {
			continue
		}
		info, ok := t.byName[mt.Name]
		if ok && info.id == mt.TopicID && info.ver == t.namesWrites && (mt.Partitions <= 0 || info.partitions == mt.Partitions) &&
			at.Sub(info.seen) < seenEvery {
			continue // names[mt.TopicID] is mt.Name, and the count is the same
		}
		info.seen = at
		if mt.TopicID != ([16]byte{}) {
			if n, ok := t.names[mt.TopicID]; !ok || n != mt.Name {
				t.names[mt.TopicID] = mt.Name
				t.namesWrites++
			}
		}
		if mt.Partitions > 0 {
			info.partitions = mt.Partitions
		}
		info.id, info.ver = mt.TopicID, t.namesWrites
		t.byName[mt.Name] = info
	}
}

// forget drops the topics no answer named since cutoff, and their ids.
func (t *topicNames) forget(cutoff time.Time) {
	for name, info := range t.byName {
		if !info.seen.Before(cutoff) {
			continue
		}
		delete(t.byName, name)
		if t.names[info.id] == name {
			delete(t.names, info.id)
			t.namesWrites++ // what add checked of the other topics is stale
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
