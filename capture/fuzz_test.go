package capture

import (
	"bytes"
	"testing"

	"github.com/kproxy-dev/kproxy/capture/pcapsynth"
)

// FuzzReassembly mangles the seed scenario's capture, cut into small
// segments, as ops say: per segment, kept, dropped, sent twice, swapped
// with the next, or cut short; and the capture may begin after ops[0]
// segments. Whatever it does, reading it must not panic, and every
// exchange told must be one the journal holds, whole.
func FuzzReassembly(f *testing.F) {
	xs := readJournal(f, seedJournal)
	var packets []pcapsynth.Packet
	writeCapture(f, xs, pcapsynth.Pcap, pcapsynth.ExchangeOptions{}, func(w *pcapsynth.Writer) {
		w.MSS, w.Acks = 48, true
		w.Mangle = func(ps []pcapsynth.Packet) []pcapsynth.Packet {
			packets = append(packets, ps...)
			return nil
		}
	})
	f.Add([]byte{0})
	f.Add([]byte{0, 4, 0, 0, 5, 0, 6, 0, 7})
	f.Add([]byte{40, 0, 0, 0, 12, 0})
	f.Add(bytes.Repeat([]byte{6, 0, 5}, 20))
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		var buf bytes.Buffer
		w, err := pcapsynth.NewWriter(&buf, pcapsynth.Pcap)
		if err != nil {
			t.Fatal(err)
		}
		ps, rest := packets[min(int(ops[0])*4, len(packets)):], ops[1:]
		var out []pcapsynth.Packet
		for i := 0; i < len(ps); i++ {
			p := ps[i]
			var op byte
			if len(rest) > 0 {
				op = rest[i%len(rest)]
			}
			switch op % 8 {
			case 4:
			case 5:
				out = append(out, p, p)
			case 6:
				if i+1 < len(ps) {
					out = append(out, ps[i+1])
					i++
				}
				out = append(out, p)
			case 7:
				if n := int(op >> 3); n < len(p.Payload) {
					p.WireLen = len(p.Payload)
					p.Payload = p.Payload[:n]
				}
				out = append(out, p)
			default:
				out = append(out, p)
			}
		}
		if err := w.Write(out...); err != nil {
			t.Fatal(err)
		}
		src := openCapture(t, Config{}, buf.Bytes())
		got, _ := drain(t, src)
		checkTrue(t, got, xs)
	})
}
