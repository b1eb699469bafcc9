package journal

import (
	"fmt"
	"os"
	"testing"

	"github.com/kproxy-dev/kproxy/decode"
)

// certExchanges are test exchanges from..to-1, those of the odd
// connections with the client certificate they presented.
func certExchanges(from, to int) []*decode.Exchange {
	xs := exchanges(from, to)
	for _, x := range xs {
		if x.ConnID%2 == 1 {
			x.ClientCert = fmt.Sprintf("CN=client-%d,OU=payments,O=Acme Corp", x.ConnID)
		}
	}
	return xs
}

// TestClientCertEverySegment: each exchange reads back with its
// connection's certificate subject, and each segment, read alone, names
// the certificates of its own exchanges (retention deletes whole
// segments), once per connection.
func TestClientCertEverySegment(t *testing.T) {
	dir := t.TempDir()
	want := certExchanges(0, 300)
	writeJournal(t, dir, Options{SegmentBytes: 4096}, want)
	got, rs := readAll(t, dir)
	checkSame(t, got, want)
	if rs.Unknown != 0 || rs.Corrupt != 0 {
		t.Errorf("read %d unknown and %d corrupt records; want none", rs.Unknown, rs.Corrupt)
	}
	segs := segmentsIn(t, dir)
	if len(segs) < 5 {
		t.Fatalf("%d segments; want at least 5", len(segs))
	}
	for _, seg := range segs {
		xs, _ := readAll(t, seg)
		conns := map[uint64]bool{}
		for _, x := range xs {
			if x.ConnID%2 == 1 {
				conns[x.ConnID] = true
				if want := fmt.Sprintf("CN=client-%d,OU=payments,O=Acme Corp", x.ConnID); x.ClientCert != want {
					t.Fatalf("%s: connection %d read alone carries %q; want %q", seg, x.ConnID, x.ClientCert, want)
				}
			} else if x.ClientCert != "" {
				t.Fatalf("%s: connection %d without a certificate carries %q", seg, x.ConnID, x.ClientCert)
			}
		}
		if n := certRecords(t, seg); n != len(conns) {
			t.Errorf("%s: %d client certificate records for %d connections; want one each", seg, n, len(conns))
		}
	}
}

// certRecords counts the client certificate records of a segment.
func certRecords(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, off := range rawRecordOffsets(t, b) {
		if b[off+frameLen] == recClientCert {
			n++
		}
	}
	return n
}

// rawRecordOffsets walks the frames of an undamaged segment.
func rawRecordOffsets(t *testing.T, b []byte) []int {
	t.Helper()
	h, err := parseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int
	for off := h.Len; off < len(b); {
		offs = append(offs, off)
		off += frameLen + int(uint32(b[off+4])<<24|uint32(b[off+5])<<16|uint32(b[off+6])<<8|uint32(b[off+7]))
	}
	return offs
}

// TestClientCertRecordMalformed: a client certificate record whose checksum
// is right but whose payload does not parse is counted corrupt, and the
// exchanges after it are read without a certificate.
func TestClientCertRecordMalformed(t *testing.T) {
	for _, p := range [][]byte{
		{recClientCert, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0},      // an empty subject
		{recClientCert, 0, 0, 0, 0, 0, 0, 0, 1, 0, 5, 'C'}, // cut short
	} {
		if _, _, err := parseClientCert(p); err == nil {
			t.Errorf("parseClientCert(%x) = nil error; want one", p)
		}
	}
	if conn, subject, err := parseClientCert(appendClientCert(nil, 7, "CN=a")); err != nil || conn != 7 || subject != "CN=a" {
		t.Errorf("round trip = %d %q %v; want 7 CN=a", conn, subject, err)
	}
}
