package decode

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceAcks reads acks from Produce requests of every version kmsg
// knows, built with kmsg, with and without a transactional id, and checks
// that exactly the bytes up to acks are needed.
func TestProduceAcks(t *testing.T) {
	for v := range kmsg.NewPtrProduceRequest().MaxVersion() + 1 {
		for _, acks := range []int16{0, 1, -1} {
			for _, txn := range []*string{nil, kmsg.StringPtr("txn-" + strings.Repeat("x", 300))} {
				t.Run(fmt.Sprintf("v%d acks=%d txn=%v", v, acks, txn != nil), func(t *testing.T) {
					req := kmsg.NewPtrProduceRequest()
					req.SetVersion(v)
					req.Acks, req.TransactionID, req.TimeoutMillis = acks, txn, 1000
					topic := kmsg.NewProduceRequestTopic()
					topic.Topic = "t"
					topic.Partitions = append(topic.Partitions, kmsg.NewProduceRequestTopicPartition())
					req.Topics = append(req.Topics, topic)
					frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("client")).AppendRequest(nil, req, 5)[4:]
					got, ok := ProduceAcks(frame)
					if !ok || got != acks {
						t.Errorf("ProduceAcks = %d, %v; want %d, true", got, ok, acks)
					}
					// The frame must be needed exactly up to the end of acks.
					h, err := ParseRequestHeader(frame)
					if err != nil {
						t.Fatal(err)
					}
					end := h.Len + 2
					switch n := len(strOrEmpty(txn)); {
					case v >= 9 && txn == nil:
						end++ // compact null: uvarint 0
					case v >= 9:
						end += len(binary.AppendUvarint(nil, uint64(n+1))) + n
					case v >= 3:
						end += 2 + n
					}
					if _, ok := ProduceAcks(frame[:end-1]); ok {
						t.Errorf("acks found in the first %d bytes; they end at %d", end-1, end)
					}
					if got, ok := ProduceAcks(frame[:end]); !ok || got != acks {
						t.Errorf("first %d bytes: ProduceAcks = %d, %v; want %d, true", end, got, ok, acks)
					}
				})
			}
		}
	}
}

func strOrEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
