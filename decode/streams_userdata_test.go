package decode

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsBytes builds Kafka Streams userdata the way Java writes it:
// big-endian, strings with a 16-bit length, bytes and arrays with a 32-bit
// count.
type streamsBytes struct{ bytes.Buffer }

func (b *streamsBytes) i8(v int8)   { b.WriteByte(byte(v)) }
func (b *streamsBytes) i16(v int16) { b.Write(binary.BigEndian.AppendUint16(nil, uint16(v))) }
func (b *streamsBytes) i32(v int32) { b.Write(binary.BigEndian.AppendUint32(nil, uint32(v))) }
func (b *streamsBytes) i64(v int64) { b.Write(binary.BigEndian.AppendUint64(nil, uint64(v))) }
func (b *streamsBytes) str(s string) {
	b.i16(int16(len(s)))
	b.WriteString(s)
}
func (b *streamsBytes) byts(s string) {
	b.i32(int32(len(s)))
	b.WriteString(s)
}
func (b *streamsBytes) uuid() {
	b.Write([]byte{0x6f, 0x2c, 0x1e, 0x5a, 0x93, 0x41, 0x4b, 0x0e, 0x8c, 0x7d, 0x21, 0x44, 0x5f, 0x0a, 0xbc, 0xde})
}

// task writes an AssignmentInfo TaskId of version v.
func (b *streamsBytes) task(v int32, sub, part int32, name string) {
	b.i32(sub)
	b.i32(part)
	if v >= 10 {
		u := utf16.Encode([]rune(name))
		b.i32(int32(len(u)))
		for _, c := range u {
			b.i16(int16(c))
		}
	}
}

// subscriptionInfo builds a SubscriptionInfo of version v from
// SubscriptionInfoData.json, with previous tasks 0_0 0_1 (active) and 1_0
// (standby): as lists before v7, as offset sums after.
func subscriptionInfo(v int32) []byte {
	var b streamsBytes
	b.i32(v)
	if v >= 3 {
		b.i32(max(v, 11))
	}
	b.uuid()
	if v <= 6 {
		b.i32(2)
		b.i32(0)
		b.i32(0)
		b.i32(0)
		b.i32(1)
		b.i32(1)
		b.i32(1)
		b.i32(0)
	}
	if v >= 2 {
		b.byts("app-1.example:8080")
	}
	switch {
	case v >= 10:
		b.i32(3)
		b.i32(0)
		b.i32(0)
		b.i64(-2)
		b.i16(-1) // no named topology
		b.i32(0)
		b.i32(1)
		b.i64(-2)
		b.i16(-1)
		b.i32(1)
		b.i32(0)
		b.i64(4711)
		b.str("orders")
	case v >= 7:
		b.i32(2)
		b.i32(0) // topic group 0
		b.i32(2)
		b.i32(0)
		b.i64(-2)
		b.i32(1)
		b.i64(-2)
		b.i32(1) // topic group 1
		b.i32(1)
		b.i32(0)
		b.i64(4711)
	}
	if v >= 8 {
		b.i8(3)
	}
	if v >= 9 {
		b.i32(0)
	}
	if v >= 11 {
		b.i32(1)
		b.byts("zone")
		b.byts("eu-1a")
	}
	if v > 11 {
		b.i32(42) // a field of a newer version
	}
	return b.Bytes()
}

// assignmentInfo builds an AssignmentInfo of version v as Java's
// AssignmentInfo.encode writes it: active 0_0 (two partitions) and 0_1,
// standby 1_0, one host.
func assignmentInfo(v int32, next int64) []byte {
	var b streamsBytes
	b.i32(v)
	if v >= 3 {
		b.i32(v)
	}
	name := ""
	if v >= 10 {
		name = "orders"
	}
	b.i32(3)
	b.task(v, 0, 0, "")
	b.task(v, 0, 0, "")
	b.task(v, 0, 1, name)
	b.i32(1)
	b.task(v, 1, 0, "")
	b.i32(1)
	b.str("app-changelog")
	b.i32(0)
	switch {
	case v >= 5:
		b.i32(2) // topic dictionary
		b.i32(0)
		b.str("input")
		b.i32(1)
		b.str("app-changelog")
		hosts := 1
		if v >= 6 {
			hosts = 2 // active, then standby
		}
		for range hosts {
			b.i32(1)
			b.str("app-1.example")
			b.i32(8080)
			b.i32(1)
			b.i32(0)
			b.i32(1)
		}
	case v >= 2:
		b.i32(1)
		b.str("app-1.example")
		b.i32(8080)
		b.i32(1)
		b.str("input")
		b.i32(1)
	}
	if v >= 4 {
		b.i32(0)
	}
	if v >= 7 {
		b.i64(next)
	}
	return b.Bytes()
}

// consumerSubscription wraps userData in a ConsumerProtocolSubscription v3.
func consumerSubscription(userData []byte) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = 3
	m.Topics = []string{"input"}
	m.UserData = userData
	m.Generation = 4
	return m.AppendTo(nil)
}

// consumerAssignment wraps userData in a ConsumerProtocolAssignment.
func consumerAssignment(userData []byte) []byte {
	m := kmsg.NewConsumerMemberAssignment()
	m.Version = 3
	t := kmsg.NewConsumerMemberAssignmentTopic()
	t.Topic, t.Partitions = "input", []int32{0, 3, 1}
	m.Topics = append(m.Topics, t)
	m.UserData = userData
	return m.AppendTo(nil)
}

func truncate(b []byte) []byte { return b[:len(b)-1] }

func trailing(b []byte) []byte { return append(b, 0) }

// streamsUserDataCase is a consumer protocol subscription or assignment
// made by assignor.
type streamsUserDataCase struct {
	name     string
	assignor string
	sub      []byte // consumer protocol subscription, or
	asg      []byte // assignment
}

// capturedStreamsUserData is the userdata of real Kafka Streams 4.4.0
// members, as kproxy's journal kept it in e2e scenario 53.
func capturedStreamsUserData(t *testing.T) []streamsUserDataCase {
	b, err := os.ReadFile(filepath.Join("testdata", "streams_userdata", "captured-kafka-4.4.0.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out []streamsUserDataCase
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, enc, _ := strings.Cut(line, " ")
		raw, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c := streamsUserDataCase{name: "captured_" + name, assignor: AssignorStreams}
		if strings.HasPrefix(name, "subscription") {
			c.sub = raw
		} else {
			c.asg = raw
		}
		out = append(out, c)
	}
	return out
}

func TestStreamsUserData(t *testing.T) {
	const probeAt = 1764900000000
	cases := []streamsUserDataCase{
		{"subscription_v1", "stream", consumerSubscription(subscriptionInfo(1)), nil},
		{"subscription_v2", "stream", consumerSubscription(subscriptionInfo(2)), nil},
		{"subscription_v6", "stream", consumerSubscription(subscriptionInfo(6)), nil},
		{"subscription_v9", "stream", consumerSubscription(subscriptionInfo(9)), nil},
		{"subscription_v11", "stream", consumerSubscription(subscriptionInfo(11)), nil},
		{"subscription_v12_newer", "stream", consumerSubscription(subscriptionInfo(12)), nil},
		{"subscription_truncated", "stream", consumerSubscription(truncate(subscriptionInfo(11))), nil},
		{"subscription_trailing", "stream", consumerSubscription(trailing(subscriptionInfo(11))), nil},
		{"subscription_version_0", "stream", consumerSubscription([]byte{0, 0, 0, 0}), nil},
		{"subscription_other_assignor", "range", consumerSubscription(subscriptionInfo(11)), nil},
		{"assignment_v1", "stream", nil, consumerAssignment(assignmentInfo(1, 0))},
		{"assignment_v4", "stream", nil, consumerAssignment(assignmentInfo(4, 0))},
		{"assignment_v5", "stream", nil, consumerAssignment(assignmentInfo(5, 0))},
		{"assignment_v6", "stream", nil, consumerAssignment(assignmentInfo(6, 0))},
		{"assignment_v7_probing", "stream", nil, consumerAssignment(assignmentInfo(7, probeAt))},
		{"assignment_v11_no_followup", "stream", nil, consumerAssignment(assignmentInfo(11, StreamsNoRebalance))},
		{"assignment_v11_immediate", "stream", nil, consumerAssignment(assignmentInfo(11, 0))},
		{"assignment_truncated", "stream", nil, consumerAssignment(truncate(assignmentInfo(11, 0)))},
		{"assignment_trailing", "stream", nil, consumerAssignment(trailing(assignmentInfo(11, 0)))},
		{"assignment_unknown_assignor", "", nil, consumerAssignment(assignmentInfo(11, 0))},
	}
	cases = append(cases, capturedStreamsUserData(t)...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got any
			if c.sub != nil {
				got = decodeSubscription(c.assignor, c.sub)
			} else {
				got = decodeAssignment(c.assignor, c.asg)
			}
			b, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, '\n')
			path := filepath.Join("testdata", "streams_userdata", c.name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden (run go test -run TestStreamsUserData -update ./decode): %v", err)
			}
			if !bytes.Equal(b, want) {
				t.Errorf("decoded differs from %s:\n%s", path, firstDiff(string(b), string(want)))
			}
		})
	}
}

// TestStreamsTaskIDString checks the task names Streams prints.
func TestStreamsTaskIDString(t *testing.T) {
	for _, c := range []struct {
		id   StreamsTaskID
		want string
	}{
		{StreamsTaskID{Subtopology: 0, Partition: 1}, "0_1"},
		{StreamsTaskID{Subtopology: 12, Partition: 3, Topology: "orders"}, "orders__12_3"},
	} {
		if got := c.id.String(); got != c.want {
			t.Errorf("%+v: got %q, want %q", c.id, got, c.want)
		}
	}
}

// FuzzStreamsUserData feeds arbitrary bytes to the Streams userdata
// readers: they must return nil or a value, never panic, and a value read
// from bytes must name versions of at least 1.
func FuzzStreamsUserData(f *testing.F) {
	for v := int32(1); v <= 12; v++ {
		f.Add(subscriptionInfo(v))
		f.Add(assignmentInfo(min(v, 11), 0))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if s := decodeStreamsSubscription(b); s != nil && s.Version < 1 {
			t.Fatalf("subscription version %d", s.Version)
		}
		if a := decodeStreamsAssignment(b); a != nil && a.Version < 1 {
			t.Fatalf("assignment version %d", a.Version)
		}
	})
}
