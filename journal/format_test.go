package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// exchangeCases are exchanges that exercise every field and edge.
func exchangeCases() map[string]*decode.Exchange {
	at := time.Date(2026, 3, 15, 14, 2, 11, 204_573_118, time.Local)
	return map[string]*decode.Exchange{
		"every field": testExchange(42),
		"no response": {
			ConnID: 1<<63 + 5, ClientAddr: "[::1]:54321", BrokerID: -1, APIKey: 12, APIVersion: 4,
			CorrelationID: -7, ClientID: "", RequestAt: at, Request: []byte{0, 12, 0, 4, 0xff, 0xff, 0xff, 0xf9, 0xff, 0xff, 0},
		},
		"empty but present frames": {
			ConnID: 9, ClientAddr: "10.0.0.1:1", BrokerID: 2147483647, APIKey: -1, APIVersion: -1,
			CorrelationID: 2147483647, ClientID: "ünïcode-客户", RequestAt: at, ResponseAt: at.Add(time.Nanosecond),
			Request: []byte{}, Response: []byte{},
		},
		"zero value":  {},
		"large frame": {APIKey: 14, RequestAt: at, Request: bytes.Repeat([]byte{0xab}, 1<<20), Response: bytes.Repeat([]byte{0xcd}, 3)},
	}
}

func TestExchangePayloadRoundTrip(t *testing.T) {
	for name, x := range exchangeCases() {
		t.Run(name, func(t *testing.T) {
			p := appendExchange(nil, x)
			if len(p) != exchangePayloadLen(x) {
				t.Fatalf("payload is %d bytes; exchangePayloadLen says %d", len(p), exchangePayloadLen(x))
			}
			got, err := parseExchange(p)
			if err != nil {
				t.Fatalf("parseExchange: %v", err)
			}
			if d := diffExchange(got, x); d != "" {
				t.Fatal(d)
			}
			// Into an exchange whose every field is set, it sets them all.
			other := testExchange(7)
			if err := parseExchangeInto(other, p); err != nil {
				t.Fatalf("parseExchangeInto: %v", err)
			}
			if !reflect.DeepEqual(other, got) {
				t.Fatalf("parseExchangeInto over another exchange gives %+v; want %+v", other, got)
			}
		})
	}
}

func TestParseExchangeRejectsMalformed(t *testing.T) {
	good := appendExchange(nil, testExchange(3))
	cases := map[string][]byte{
		"empty":          {},
		"fixed part cut": good[:exchangeFixedLen-1],
		"wrong type":     append([]byte{recGap}, good[1:]...),
		"unknown flag":   append([]byte{recExchange, 0x80}, good[2:]...),
		"trailing byte":  append(append([]byte{}, good...), 0),
		"last byte cut":  good[:len(good)-1],
	}
	// A nil Response (flag clear) whose length field says 1, followed by 1 byte.
	p := appendExchange(nil, &decode.Exchange{Request: []byte{1}})
	p[len(p)-1] = 1
	cases["nil response with a length"] = append(p, 0)
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := parseExchange(p); !errors.Is(err, errPayload) {
				t.Fatalf("parseExchange: got %v; want errPayload", err)
			}
			x := testExchange(5)
			if err := parseExchangeInto(x, p); !errors.Is(err, errPayload) {
				t.Fatalf("parseExchangeInto: got %v; want errPayload", err)
			}
			if !reflect.DeepEqual(x, testExchange(5)) {
				t.Fatalf("parseExchangeInto changed the exchange it failed to parse into: %+v", x)
			}
		})
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	h := segmentHeader{Created: time.Unix(0, 1773583331204573118), JournalID: [16]byte{1, 2, 3, 15: 16}, Seq: 7, KproxyVersion: "v0.3.1-dev"}
	b := appendHeader(nil, &h)
	if len(b) != headerMinLen+len(h.KproxyVersion) {
		t.Fatalf("header is %d bytes; want %d", len(b), headerMinLen+len(h.KproxyVersion))
	}
	got, err := parseHeader(b)
	if err != nil {
		t.Fatalf("parseHeader: %v", err)
	}
	if got.Version != FormatVersion || !got.Created.Equal(h.Created) || got.JournalID != h.JournalID ||
		got.Seq != h.Seq || got.KproxyVersion != h.KproxyVersion || got.Len != len(b) {
		t.Fatalf("got %+v; want %+v", got, h)
	}
}

func TestParseHeaderErrors(t *testing.T) {
	good := appendHeader(nil, &segmentHeader{Created: testBase, Seq: 1, KproxyVersion: "test"})
	newer := append([]byte{}, good...)
	newer[9] = FormatVersion + 1
	badCRC := append([]byte{}, good...)
	badCRC[30] ^= 1
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrEmptyFile},
		{"magic cut", good[:5], ErrTruncatedHeader},
		{"version cut", good[:9], ErrTruncatedHeader},
		{"fields cut", good[:30], ErrTruncatedHeader},
		{"crc cut", good[:len(good)-1], ErrTruncatedHeader},
		{"not a journal", []byte("hello, world: this is text"), ErrNotJournal},
		{"checksum", badCRC, ErrBadHeader},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := parseHeader(c.b); !errors.Is(err, c.want) {
				t.Fatalf("got %v; want %v", err, c.want)
			}
		})
	}
	t.Run("newer version", func(t *testing.T) {
		_, err := parseHeader(newer)
		var ve *VersionError
		if !errors.As(err, &ve) || ve.Version != FormatVersion+1 {
			t.Fatalf("got %v; want a VersionError for version %d", err, FormatVersion+1)
		}
		if !strings.Contains(err.Error(), "newer") || !strings.Contains(err.Error(), "upgrade") {
			t.Fatalf("message %q does not say the version is newer and to upgrade", err)
		}
	})
}

func TestParseFsync(t *testing.T) {
	cases := []struct {
		in      string
		want    Fsync
		wantErr string
	}{
		{"always", FsyncAlways, ""},
		{"ALWAYS", FsyncAlways, ""},
		{"never", FsyncNever, ""},
		{"1s", Fsync(time.Second), ""},
		{" 250ms ", Fsync(250 * time.Millisecond), ""},
		{"", 0, "empty"},
		{"sometimes", 0, "want always, never or an interval"},
		{"0s", 0, "at least 1ms"},
		{"-1s", 0, "at least 1ms"},
		{"10us", 0, "at least 1ms"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseFsync(c.in)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %v, %v; want an error containing %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
			back, err := ParseFsync(got.String())
			if err != nil || back != got {
				t.Fatalf("String %q parses to %v, %v; want %v", got.String(), back, err, got)
			}
		})
	}
	if FsyncDefault.Interval() != time.Second || FsyncDefault.String() != "1s" {
		t.Fatalf("default policy is %v (%s); want a 1s interval", FsyncDefault.Interval(), FsyncDefault)
	}
}

// TestFormatGolden pins the bytes of a small segment, so that any change
// to the layout documented in docs/journal-format.md shows up here; -update
// rewrites testdata/segment-v1.golden.
func TestFormatGolden(t *testing.T) {
	h := segmentHeader{Created: testBase, JournalID: [16]byte{0: 0x3f, 1: 0xa2, 15: 0xff}, Seq: 1, KproxyVersion: "v0.1.0"}
	b := appendHeader(nil, &h)
	b = appendFrame(b, func(p []byte) []byte {
		return appendExchange(p, &decode.Exchange{
			ConnID: 3, ClientAddr: "127.0.0.1:40001", BrokerID: -1, APIKey: 12, APIVersion: 4, CorrelationID: 7,
			ClientID: "consumer-A", RequestAt: testBase, ResponseAt: testBase.Add(2 * time.Millisecond),
			Request: []byte{0, 12, 0, 4, 0, 0, 0, 7}, Response: []byte{0, 0, 0, 7, 0, 0, 0},
		})
	})
	b = appendFrame(b, func(p []byte) []byte { return appendGap(p, testBase.Add(time.Second), 2) })
	path := filepath.Join("testdata", "segment-v1.golden")
	if *update {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("segment bytes changed:\ngot  %x\nwant %x\n(a deliberate format change needs a new version, docs/journal-format.md and -update)", b, want)
	}
	// Spot-check the documented offsets.
	if string(b[:8]) != "\x89KPJ\r\n\x1a\n" || b[9] != 1 || int(b[11]) != 56 {
		t.Fatalf("header starts %x; want the magic, version 1 and header length 56", b[:12])
	}
	if string(b[56:60]) != "\xe2\x9c\x5b\xa7" || b[68] != recExchange {
		t.Fatalf("first record starts %x; want the sync marker then type 1", b[56:69])
	}
}

// TestEveryExchangeFieldIsJournaled fails when decode.Exchange gains a
// field the record format does not carry yet.
func TestEveryExchangeFieldIsJournaled(t *testing.T) {
	// ClientCert, a connection fact, has a record of its own (type 4).
	journaled := []string{"ConnID", "ClientAddr", "BrokerID", "APIKey", "APIVersion", "CorrelationID",
		"ClientID", "ClientCert", "RequestAt", "ResponseAt", "Request", "Response", "Oversized"}
	typ := reflect.TypeOf(decode.Exchange{})
	var fields []string
	for i := range typ.NumField() {
		fields = append(fields, typ.Field(i).Name)
	}
	if !slices.Equal(fields, journaled) {
		t.Fatalf("decode.Exchange has fields %v; the journal format carries %v: extend appendExchange, parseExchange, docs/journal-format.md (and the format version if old readers must not skip it)", fields, journaled)
	}
}
