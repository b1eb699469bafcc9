package fleet

import (
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kproxy-dev/kproxy/decode"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestRecordGolden pins the record format byte for byte (docs/fleet.md):
// each kind of record, encoded, against testdata/records-v1.golden, and
// decoded back to what was encoded.
func TestRecordGolden(t *testing.T) {
	h := headers("zone-a", "0123456789abcdef")
	x := heartbeat(42, "test_group_1", ms(1500))
	mtls := heartbeat(43, "test_group_1", ms(1550))
	mtls.ClientCert = "CN=orders,O=Acme Corp"
	recs := []struct {
		name string
		r    *kgo.Record
		want Record
	}{
		{"exchange", exchangeRecord(h, 0, recordKey("zone-a", []decode.Event{{}, {Group: "test_group_1"}}), x),
			Record{Instance: "zone-a", Run: "0123456789abcdef", Key: "test_group_1", Seq: 0, Kind: KindExchange, X: x}},
		{"gap", gapRecord(h, 1, "zone-a", ms(1600), 12),
			Record{Instance: "zone-a", Run: "0123456789abcdef", Key: "zone-a", Seq: 1, Kind: KindGap, At: ms(1600), Dropped: 12}},
		{"exchange of a mutual TLS client", exchangeRecord(h, 2, "test_group_1", mtls),
			Record{Instance: "zone-a", Run: "0123456789abcdef", Key: "test_group_1", Seq: 2, Kind: KindExchange, X: mtls}},
		{"marker", markerRecord(h, "zone-a", ms(2000), 2, true),
			Record{Instance: "zone-a", Run: "0123456789abcdef", Key: "zone-a", Seq: -1, Kind: KindMarker, At: ms(2000), Published: 2, Stopping: true}},
	}
	var b strings.Builder
	for _, rc := range recs {
		fmt.Fprintf(&b, "%s\n  key       %q\n", rc.name, rc.r.Key)
		for _, hd := range rc.r.Headers {
			fmt.Fprintf(&b, "  header    %s = %q\n", hd.Key, hd.Value)
		}
		fmt.Fprintf(&b, "  value     %s\n", hex.EncodeToString(rc.r.Value))
		t.Run(rc.name, func(t *testing.T) {
			got, err := Decode(rc.r)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if got.X != nil {
				got.X.RequestAt, got.X.ResponseAt = got.X.RequestAt.UTC(), got.X.ResponseAt.UTC()
			}
			got.At = got.At.UTC()
			if !reflect.DeepEqual(got, rc.want) {
				t.Errorf("Decode = %+v; want %+v", got, rc.want)
			}
		})
	}
	golden := filepath.Join("testdata", "records-v1.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("records differ from %s (go test -update to refresh); got:\n%s", golden, b.String())
	}
}

// TestRecordKey: one group's records share a key; records of no group are
// keyed by the instance.
func TestRecordKey(t *testing.T) {
	tests := []struct {
		name   string
		events []decode.Event
		want   string
	}{
		{"group event", []decode.Event{{Group: "g1"}}, "g1"},
		{"first group of several", []decode.Event{{Group: ""}, {Group: "g2"}, {Group: "g3"}}, "g2"},
		{"no group (Metadata)", []decode.Event{{Group: ""}}, "zone-a"},
		{"no events (Fetch, ApiVersions)", nil, "zone-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := recordKey("zone-a", tt.events); got != tt.want {
				t.Errorf("recordKey = %q; want %q", got, tt.want)
			}
		})
	}
}

// TestDecodeForeign: records kproxy did not write, or a newer kproxy did,
// are refused with ErrNotFleetRecord; damaged ones with another error.
func TestDecodeForeign(t *testing.T) {
	h := headers("zone-a", "r")
	good := exchangeRecord(h, 0, "g", heartbeat(1, "g", ms(0)))
	tests := []struct {
		name    string
		r       *kgo.Record
		foreign bool
	}{
		{"no headers", &kgo.Record{Value: good.Value}, true},
		{"newer format", &kgo.Record{Value: good.Value, Headers: []kgo.RecordHeader{
			{Key: HeaderInstance, Value: []byte("zone-a")}, {Key: HeaderFormat, Value: []byte("2")}}}, true},
		{"empty value", &kgo.Record{Headers: good.Headers}, true},
		{"cut exchange", &kgo.Record{Value: good.Value[:20], Headers: good.Headers}, false},
		{"unknown type", &kgo.Record{Value: []byte{0x7f}, Headers: good.Headers}, false},
		{"exchange without seq", &kgo.Record{Value: good.Value, Headers: h}, false},
		{"bad seq", &kgo.Record{Value: good.Value, Headers: append(append([]kgo.RecordHeader{}, h...),
			kgo.RecordHeader{Key: HeaderSeq, Value: []byte("-3")})}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.r)
			if err == nil {
				t.Fatal("Decode accepted it")
			}
			if errors.Is(err, ErrNotFleetRecord) != tt.foreign {
				t.Errorf("Decode error %v; want ErrNotFleetRecord %v", err, tt.foreign)
			}
		})
	}
}
