package journal

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// lossesJournal is a crafted journal shared with cmd/kproxy's tests: two
// heartbeats around gaps of every kind, whose counts add up past the
// largest uint64.
const lossesJournal = "../testdata/journals/losses"

// lossesSegment builds lossesJournal's one segment: a heartbeat; a gap of
// 3 (a full queue); a gap of 5 with the suspension record saying a full
// disk lost them; a gap of 2^64-2 (a full queue); a heartbeat.
func lossesSegment() []byte {
	h := segmentHeader{Created: testBase, JournalID: [16]byte{0: 0x10, 15: 0x55}, Seq: 1, KproxyVersion: "v0.1.0"}
	b := appendHeader(nil, &h)
	heartbeat := func(corr int32, at time.Time) []byte {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version, req.Group, req.Generation, req.MemberID = 4, "g", 1, "consumer-A-1"
		frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("consumer-A")).AppendRequest(nil, req, corr)
		resp := kmsg.NewPtrHeartbeatResponse()
		resp.Version = 4
		return appendFrame(nil, func(p []byte) []byte {
			return appendExchange(p, &decode.Exchange{
				ConnID: 3, ClientAddr: "127.0.0.1:40001", BrokerID: -1, APIKey: 12, APIVersion: 4, CorrelationID: corr,
				ClientID: "consumer-A", RequestAt: at, ResponseAt: at.Add(2 * time.Millisecond),
				Request: frame[4:], Response: resp.AppendTo(append(binary.BigEndian.AppendUint32(nil, uint32(corr)), 0)),
			})
		})
	}
	gap := func(at time.Time, n uint64) []byte {
		return appendFrame(nil, func(p []byte) []byte { return appendGap(p, at, n) })
	}
	b = append(b, heartbeat(1, testBase)...)
	b = append(b, gap(testBase.Add(time.Second), 3)...)
	b = append(b, gap(testBase.Add(2*time.Second), 5)...)
	b = appendFrame(b, func(p []byte) []byte {
		return appendSuspension(p, suspension{At: testBase.Add(2 * time.Second), Since: testBase.Add(1500 * time.Millisecond), Lost: 5,
			Err: "journal: write /var/lib/kproxy/journal-x.kpj: write: no space left on device"})
	})
	b = append(b, gap(testBase.Add(3*time.Second), math.MaxUint64-2)...)
	return append(b, heartbeat(2, testBase.Add(4*time.Second))...)
}

// TestLossesGolden pins lossesJournal; -update rewrites it.
func TestLossesGolden(t *testing.T) {
	path := filepath.Join(lossesJournal, "journal-20260315T140211.204000Z-10000000-000001.kpj")
	b := lossesSegment()
	if *update {
		if err := os.MkdirAll(lossesJournal, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("%s changed (run with -update after a deliberate change)", path)
	}
}

// TestReaderTellsLossesApart: the reader adds the gaps up without wrapping
// past 2^64 (3 + 5 + 2^64-2 stays at the largest uint64), and counts the
// part the suspension record blames on a write error apart.
func TestReaderTellsLossesApart(t *testing.T) {
	got, rs := readAll(t, lossesJournal)
	if len(got) != 2 || rs.Corrupt != 0 || rs.Unknown != 0 {
		t.Fatalf("read %d exchanges, %d corrupt, %d unknown; want 2, 0, 0", len(got), rs.Corrupt, rs.Unknown)
	}
	if rs.Dropped != math.MaxUint64 {
		t.Errorf("Dropped %d; want it saturated at %d", rs.Dropped, uint64(math.MaxUint64))
	}
	if rs.WriteErrorLost != 5 || rs.Suspensions != 1 || !strings.HasSuffix(rs.WriteError, "no space left on device") {
		t.Errorf("write-error losses %d in %d suspensions (%q); want 5 in 1, no space left on device",
			rs.WriteErrorLost, rs.Suspensions, rs.WriteError)
	}
}

func TestSuspensionPayload(t *testing.T) {
	s := suspension{At: testBase.Add(time.Second), Since: testBase, Lost: 42, Err: "journal: write x: no space left on device"}
	p := appendSuspension(nil, s)
	got, err := parseSuspension(p)
	if err != nil || got.Lost != s.Lost || got.Err != s.Err || !got.At.Equal(s.At) || !got.Since.Equal(s.Since) {
		t.Fatalf("round trip %+v, %v; want %+v", got, err, s)
	}
	long := appendSuspension(nil, suspension{Err: strings.Repeat("x", 5000)})
	if got, err := parseSuspension(long); err != nil || len(got.Err) != maxSuspensionErr {
		t.Errorf("a long error came back %d bytes, %v; want cut to %d", len(got.Err), err, maxSuspensionErr)
	}
	for name, bad := range map[string][]byte{
		"empty":          nil,
		"short":          p[:suspensionFixedLen-1],
		"message cut":    p[:len(p)-1],
		"trailing bytes": append(append([]byte(nil), p...), 0),
		"wrong type":     append([]byte{recGap}, p[1:]...),
	} {
		if _, err := parseSuspension(bad); err == nil {
			t.Errorf("%s: parsed; want an error", name)
		}
	}
}
