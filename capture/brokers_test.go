package capture

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMetadataBrokers checks the brokers read from Metadata responses of
// every version kmsg knows, with racks and without, topics after them.
func TestMetadataBrokers(t *testing.T) {
	for v := range kmsg.NewPtrMetadataResponse().MaxVersion() + 1 {
		resp := kmsg.NewPtrMetadataResponse()
		resp.SetVersion(v)
		for i, rack := range []*string{nil, kmsg.StringPtr("eu-west-1a")} {
			b := kmsg.NewMetadataResponseBroker()
			b.NodeID, b.Host, b.Port, b.Rack = int32(i+1), fmt.Sprintf("kafka-%d.example.com", i), int32(9092+i), rack
			resp.Brokers = append(resp.Brokers, b)
		}
		topic := kmsg.NewMetadataResponseTopic()
		topic.Topic = kmsg.StringPtr("orders")
		resp.Topics = append(resp.Topics, topic)
		body := resp.AppendTo(nil)
		var got []string
		ok := metadataBrokers(v, body, func(node, port int32) { got = append(got, fmt.Sprintf("%d@%d", node, port)) })
		if want := "[1@9092 2@9093]"; !ok || fmt.Sprint(got) != want {
			t.Errorf("v%d: brokers %v (read %v), want %s", v, got, ok, want)
		}
		if metadataBrokers(v, body[:10], func(int32, int32) {}) {
			t.Errorf("v%d: a response cut in its brokers read", v)
		}
	}
}
