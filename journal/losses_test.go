package journal

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// lossesJournal is a crafted journal shared with cmd/kproxy's tests: two
// heartbeats around gaps of every kind, whose counts add up past the
// largest uint64.
const lossesJournal = "../testdata/journals/losses"

// lossesSegment builds lossesJournal's one segment: a heartbeat; gaps of
// 3, 5 and 2^64-2; a heartbeat.
func lossesSegment() []byte {
	h := segmentHeader{Created: testBase, JournalID: [16]byte{0: 0x10, 15: 0x55}, Seq: 1, KproxyVersion: "v0.1.0"}
	b := appendHeader(nil, &h)
	heartbeat := func(corr int32, at time.Time) []byte {
		return appendFrame(nil, func(p []byte) []byte {
			return appendExchange(p, &decode.Exchange{
				ConnID: 3, ClientAddr: "127.0.0.1:40001", BrokerID: -1, APIKey: 12, APIVersion: 4, CorrelationID: corr,
				ClientID: "consumer-A", RequestAt: at, ResponseAt: at.Add(2 * time.Millisecond),
				Request: []byte{0, 12, 0, 4, 0, 0, 0, byte(corr)}, Response: []byte{0, 0, 0, byte(corr), 0, 0, 0},
			})
		})
	}
	gap := func(at time.Time, n uint64) []byte {
		return appendFrame(nil, func(p []byte) []byte { return appendGap(p, at, n) })
	}
	b = append(b, heartbeat(1, testBase)...)
	b = append(b, gap(testBase.Add(time.Second), 3)...)
	b = append(b, gap(testBase.Add(2*time.Second), 5)...)
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

// TestReaderGapCountsSaturate: the reader adds the gaps up without
// wrapping past 2^64: 3 + 5 + 2^64-2 stays at the largest uint64.
func TestReaderGapCountsSaturate(t *testing.T) {
	got, rs := readAll(t, lossesJournal)
	if len(got) != 2 || rs.Corrupt != 0 || rs.Unknown != 0 {
		t.Fatalf("read %d exchanges, %d corrupt, %d unknown; want 2, 0, 0", len(got), rs.Corrupt, rs.Unknown)
	}
	if rs.Dropped != math.MaxUint64 {
		t.Errorf("Dropped %d; want it saturated at %d", rs.Dropped, uint64(math.MaxUint64))
	}
}
