package capture

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/capture/pcapsynth"
	"github.com/kproxy-dev/kproxy/decode"
)

// TestSeedStory checks that a capture of the seed scenario's traffic tells
// the story its journal tells, word for word, in either format, whether
// frames fill segments or span many, with acknowledgements or without.
func TestSeedStory(t *testing.T) {
	xs := readJournal(t, seedJournal)
	want := story(t, xs)
	if !strings.Contains(want, "gen 2 plan") {
		t.Fatalf("the seed journal's story has no plan of generation 2:\n%s", want)
	}
	for _, tc := range []struct {
		name   string
		format pcapsynth.Format
		mss    int
		acks   bool
	}{
		{"pcap", pcapsynth.Pcap, 65483, false},
		{"pcapng", pcapsynth.PcapNG, 65483, true},
		{"small segments", pcapsynth.Pcap, 7, true},
		{"ethernet segments", pcapsynth.PcapNG, 1448, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			capture := writeCapture(t, xs, tc.format, pcapsynth.ExchangeOptions{}, func(w *pcapsynth.Writer) { w.MSS, w.Acks = tc.mss, tc.acks })
			src := openCapture(t, Config{}, capture)
			got, lost := drain(t, src)
			if lost != 0 {
				t.Errorf("lost %d exchanges", lost)
			}
			if len(got) != len(xs) {
				t.Errorf("%d exchanges, want %d", len(got), len(xs))
			}
			checkTrue(t, got, xs)
			if s := story(t, got); s != want {
				t.Errorf("the capture's story differs from the journal's:\n%s\nwant:\n%s", s, want)
			}
			st := src.Stats()
			if st.Connections == 0 || st.Open != 0 || st.Resyncs != 0 || st.Desyncs != 0 || st.Gaps != 0 {
				t.Errorf("stats %+v: want connections, none open, no resync or gap", st)
			}
		})
	}
}

// TestMidSession checks a capture begun after the connections were
// opened, in the middle of frames: every exchange whose request the
// capture holds from its first byte is told, and nothing else.
func TestMidSession(t *testing.T) {
	xs := readJournal(t, seedJournal)
	for _, cut := range []time.Duration{1500 * time.Millisecond, 4 * time.Second} {
		t.Run(cut.String(), func(t *testing.T) {
			from := xs[0].RequestAt.Add(cut)
			capture := writeCapture(t, xs, pcapsynth.Pcap, pcapsynth.ExchangeOptions{}, func(w *pcapsynth.Writer) {
				w.MSS = 40 // the cut falls in the middle of frames
				w.Mangle = func(ps []pcapsynth.Packet) []pcapsynth.Packet {
					var kept []pcapsynth.Packet
					for i, p := range ps {
						// The segments of a write after the cut's first.
						if p.At.After(from) || p.At.Equal(from) && i > 0 {
							kept = append(kept, p)
						}
					}
					return kept
				}
			})
			var want []*decode.Exchange
			for _, x := range xs {
				if x.RequestAt.After(from) {
					want = append(want, x)
				}
			}
			src := openCapture(t, Config{}, capture)
			got, _ := drain(t, src)
			checkTrue(t, got, want)
			if len(got) != len(want) {
				t.Errorf("%d exchanges, want the %d whose requests were captured", len(got), len(want))
			}
			if s, w := story(t, got), story(t, want); s != w {
				t.Errorf("story:\n%s\nwant:\n%s", s, w)
			}
			if st := src.Stats(); st.Resyncs == 0 {
				t.Errorf("stats %+v: want resyncs", st)
			}
		})
	}
}

// TestRetransmissions checks that segments captured twice, out of order,
// or overlapping tell the same story, with nothing lost.
func TestRetransmissions(t *testing.T) {
	xs := readJournal(t, seedJournal)
	want := story(t, xs)
	n := 0
	capture := writeCapture(t, xs, pcapsynth.Pcap, pcapsynth.ExchangeOptions{}, func(w *pcapsynth.Writer) {
		w.MSS = 30
		w.Mangle = func(ps []pcapsynth.Packet) []pcapsynth.Packet {
			var out []pcapsynth.Packet
			for i := 0; i < len(ps); i++ {
				n++
				p := ps[i]
				switch {
				case n%5 == 0 && i+1 < len(ps): // swapped with the next
					out = append(out, ps[i+1], p)
					i++
				case n%7 == 0: // sent twice
					out = append(out, p, p)
				case n%11 == 0 && len(p.Payload) > 10: // overlapped: the first part again, then the whole
					q := p
					q.Payload = p.Payload[:10]
					out = append(out, q, p)
				default:
					out = append(out, p)
				}
			}
			return out
		}
	})
	src := openCapture(t, Config{}, capture)
	got, lost := drain(t, src)
	if lost != 0 {
		t.Errorf("lost %d", lost)
	}
	checkTrue(t, got, xs)
	if s := story(t, got); s != want {
		t.Errorf("story:\n%s\nwant:\n%s", s, want)
	}
	if st := src.Stats(); st.Retransmitted == 0 || st.Gaps != 0 {
		t.Errorf("stats %+v: want retransmissions and no gap", st)
	}
}

// TestGaps removes segments from the capture, and cuts others short as a
// snap length does: whatever is missing, nothing panics, every exchange
// told is one the journal holds, whole, and the losses are counted.
func TestGaps(t *testing.T) {
	xs := readJournal(t, seedJournal)
	for _, every := range []int{3, 7, 20, 50} {
		for _, cut := range []bool{false, true} {
			t.Run(fmt.Sprintf("every %d cut %v", every, cut), func(t *testing.T) {
				n := 0
				capture := writeCapture(t, xs, pcapsynth.Pcap, pcapsynth.ExchangeOptions{}, func(w *pcapsynth.Writer) {
					w.MSS = 64
					w.Acks = true
					w.Mangle = func(ps []pcapsynth.Packet) []pcapsynth.Packet {
						var out []pcapsynth.Packet
						for _, p := range ps {
							n++
							switch {
							case len(p.Payload) == 0 || n%every != 0:
								out = append(out, p)
							case cut:
								p.WireLen = len(p.Payload)
								p.Payload = p.Payload[:len(p.Payload)/2]
								out = append(out, p)
							}
						}
						return out
					}
				})
				src := openCapture(t, Config{}, capture)
				got, lost := drain(t, src)
				checkTrue(t, got, xs)
				if lost == 0 || len(got) == len(xs) {
					t.Errorf("%d of %d exchanges told, %d lost: want some lost", len(got), len(xs), lost)
				}
				if st := src.Stats(); st.Gaps == 0 || st.Lost != lost {
					t.Errorf("stats %+v: want gaps, and Lost = %d", st, lost)
				}
				story(t, got) // tells, without panicking
			})
		}
	}
}

// TestGapInPayload checks that bytes missing inside a frame that is
// skipped anyway (a Produce's records) lose nothing.
func TestGapInPayload(t *testing.T) {
	xs := readJournal(t, seedJournal)
	produce := produceExchange(t, xs[0].RequestAt.Add(time.Second), 200_000)
	all := append([]*decode.Exchange{produce}, xs...)
	capture := writeCapture(t, all, pcapsynth.Pcap, pcapsynth.ExchangeOptions{}, func(w *pcapsynth.Writer) {
		w.MSS = 1448
		w.Mangle = func(ps []pcapsynth.Packet) []pcapsynth.Packet {
			if len(ps) > 10 && ps[0].Conn.Client.Port() == 1 {
				return append(ps[:3], ps[8:]...) // five segments of records lost
			}
			return ps
		}
	})
	src := openCapture(t, Config{}, capture)
	got, lost := drain(t, src)
	if lost != 0 {
		t.Errorf("lost %d", lost)
	}
	checkTrue(t, got, xs)
	if len(got) != len(xs) {
		t.Errorf("%d exchanges, want %d", len(got), len(xs))
	}
	if st := src.Stats(); st.Gaps != 1 {
		t.Errorf("stats %+v: want one gap", st)
	}
}

// produceExchange is a Produce of about size bytes from 127.0.0.1:1 and
// its response, the request on a connection of its own (whose frames the
// capture skips).
func produceExchange(t testing.TB, at time.Time, size int) *decode.Exchange {
	t.Helper()
	req := producePayload(size)
	return &decode.Exchange{ConnID: 1 << 40, ClientAddr: "127.0.0.1:1", BrokerID: 0, APIKey: 0, APIVersion: 9,
		CorrelationID: 7, RequestAt: at, ResponseAt: at.Add(time.Millisecond), Request: req,
		Response: []byte{0, 0, 0, 7, 0}}
}

// producePayload is a Produce v9 request frame with acks -1 whose records
// make it about size bytes.
func producePayload(size int) []byte {
	b := []byte{0, 0, 0, 9, 0, 0, 0, 7, 0, 3, 'p', 'r', 'o', 0} // header v2: key, version, corr, client id, tags
	b = append(b, 0, 0xff, 0xff, 0, 0, 0x75, 0x30)              // null transactional id, acks -1, timeout
	return append(b, bytes.Repeat([]byte{0x42}, size)...)
}

// TestTLS checks that a TLS connection on a broker port is recognised,
// counted and skipped.
func TestTLS(t *testing.T) {
	var buf bytes.Buffer
	w, err := pcapsynth.NewWriter(&buf, pcapsynth.Pcap)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 15, 14, 0, 0, 0, time.UTC)
	c := pcapsynth.NewConn(netip.MustParseAddrPort("10.0.0.1:40000"), netip.MustParseAddrPort("10.0.0.2:9093"), 1000)
	hello := append([]byte{0x16, 0x03, 0x01, 0x00, 0xf4, 0x01}, bytes.Repeat([]byte{7}, 244)...)
	appData := append([]byte{0x17, 0x03, 0x03, 0x01, 0x00}, bytes.Repeat([]byte{9}, 256)...)
	steps := []error{
		w.Open(c, at),
		w.Send(c, true, hello, at),
		w.Send(c, false, append([]byte{0x16, 0x03, 0x03, 0, 4}, 1, 2, 3, 4), at),
		w.Send(c, true, appData, at),
		w.Send(c, false, appData, at),
		w.Close(c, at),
	}
	for _, err := range steps {
		if err != nil {
			t.Fatal(err)
		}
	}
	src := openCapture(t, Config{BrokerPorts: []uint16{9093}}, buf.Bytes())
	got, lost := drain(t, src)
	if len(got) != 0 || lost != 0 {
		t.Errorf("%d exchanges, %d lost from a TLS connection", len(got), lost)
	}
	if st := src.Stats(); st.TLSConnections != 1 || st.TLSBytes == 0 || st.Open != 0 {
		t.Errorf("stats %+v: want one TLS connection, its bytes counted, ended", st)
	}
}

// TestLearnsBrokerPorts checks that the ports Metadata responses name are
// followed: a capture of the seed cluster, whose nodes listen on the ports
// its Metadata names and its bootstrap on 9092, tells the whole story
// knowing only 9092.
func TestLearnsBrokerPorts(t *testing.T) {
	xs := readJournal(t, seedJournal)
	learner := openCapture(t, Config{}, writeCapture(t, xs, pcapsynth.Pcap, pcapsynth.ExchangeOptions{}, nil))
	drain(t, learner)
	nodes := map[int32]uint16{}
	for p := range 1 << 16 {
		if n := learner.brokers.node(uint16(p)); p != DefaultBrokerPort && n >= 0 {
			nodes[n] = uint16(p)
		}
	}
	if len(nodes) != 3 {
		t.Fatalf("nodes %v, want the seed cluster's 3", nodes)
	}
	src := openCapture(t, Config{}, writeCapture(t, xs, pcapsynth.Pcap, pcapsynth.ExchangeOptions{NodePorts: nodes}, nil))
	got, _ := drain(t, src)
	if s, want := story(t, got), story(t, xs); s != want {
		t.Errorf("story:\n%s\nwant:\n%s", s, want)
	}
	for _, x := range got {
		if x.BrokerID >= 0 && nodes[x.BrokerID] == 0 {
			t.Errorf("exchange %s: broker %d, want a node of the cluster or -1", exchangeKey(x), x.BrokerID)
		}
	}
	if st := src.Stats(); st.LearnedPorts != 3 {
		t.Errorf("learned %d ports, want 3", st.LearnedPorts)
	}
}

// TestNotACapture checks the error for a file that is no capture.
func TestNotACapture(t *testing.T) {
	_, err := NewSource(Config{}, []string{"notes.txt"}, []io.Reader{strings.NewReader("hello, world")})
	if err == nil || !strings.Contains(err.Error(), "notes.txt: not a pcap or pcapng capture") {
		t.Errorf("error %v", err)
	}
}

// TestKeepalive checks a connection first seen through a TCP keepalive
// probe (sequence number one before the stream's next byte, no payload)
// and its acknowledgement, with sequence numbers past 2^31: no gap, and
// the exchange after them told.
func TestKeepalive(t *testing.T) {
	xs := readJournal(t, seedJournal)
	var hb *decode.Exchange
	for _, x := range xs {
		if x.APIKey == 12 && x.Response != nil {
			hb = x
			break
		}
	}
	var buf bytes.Buffer
	w, err := pcapsynth.NewWriter(&buf, pcapsynth.Pcap)
	if err != nil {
		t.Fatal(err)
	}
	const isn = 0xf0000000
	c := pcapsynth.NewConn(netip.MustParseAddrPort(hb.ClientAddr), netip.MustParseAddrPort("127.0.0.1:9092"), isn)
	at := hb.RequestAt.Add(-time.Second)
	probe := pcapsynth.Packet{At: at, Conn: c, FromClient: true, Seq: isn - 1, Ack: isn ^ 0x5a5a5a5a, Flags: pcapsynth.ACK}
	ack := pcapsynth.Packet{At: at, Conn: c, Seq: isn ^ 0x5a5a5a5a, Ack: isn, Flags: pcapsynth.ACK}
	steps := []error{
		w.Write(probe, ack),
		w.Send(c, true, frameOf(hb.Request), hb.RequestAt),
		w.Send(c, false, frameOf(hb.Response), hb.ResponseAt),
		w.Close(c, hb.ResponseAt),
	}
	for _, err := range steps {
		if err != nil {
			t.Fatal(err)
		}
	}
	src := openCapture(t, Config{}, buf.Bytes())
	got, lost := drain(t, src)
	checkTrue(t, got, xs)
	if len(got) != 1 || lost != 0 {
		t.Errorf("%d exchanges, %d lost; want the heartbeat", len(got), lost)
	}
	if st := src.Stats(); st.Gaps != 0 {
		t.Errorf("stats %+v: want no gap", st)
	}
}

// frameOf is b with its 4-byte size before it.
func frameOf(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}
