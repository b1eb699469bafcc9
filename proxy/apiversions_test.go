package proxy

import (
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// apiVersionsRequest is an ApiVersions request frame at version, whose body
// is v3's (a client software name and version), as a newer client's may be
// for all kproxy knows.
func apiVersionsRequest(version int16, corr int32) []byte {
	b := make([]byte, 4, 64)
	b = binary.BigEndian.AppendUint16(b, 18)
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = appendNullableString(b, nil) // client id
	b = append(b, 0)                 // header tags
	b = append(b, 5, 't', 'e', 's', 't', 4, '1', '.', '0', 0)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// readApiVersions reads an ApiVersions response frame in v0 and returns its
// correlation id and body.
func readApiVersions(t *testing.T, c net.Conn) (int32, *kmsg.ApiVersionsResponse) {
	t.Helper()
	frame, err := readTestFrame(c)
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	if err := resp.ReadFrom(frame[8:]); err != nil {
		t.Fatalf("ApiVersions response %x: %v", frame, err)
	}
	return int32(binary.BigEndian.Uint32(frame[4:])), resp
}

// TestApiVersionsAboveKmsg: an ApiVersions request above the version kmsg
// reads is answered by kproxy as a broker answers one above its own (v0,
// UNSUPPORTED_VERSION, the ApiVersions versions it reads), after the
// responses to the requests before it, and is not forwarded.
func TestApiVersionsAboveKmsg(t *testing.T) {
	max := kmsg.NewPtrApiVersionsRequest().MaxVersion()
	// A broker answering its first request only when told to.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	release := make(chan struct{})
	forwarded := make(chan []byte, 4)
	go func() {
		up, err := ln.Accept()
		if err != nil {
			return
		}
		defer up.Close()
		for first := true; ; first = false {
			frame, err := readTestFrame(up)
			if err != nil {
				return
			}
			forwarded <- frame
			if first {
				<-release
			}
			resp := binary.BigEndian.AppendUint32(make([]byte, 4, 16), binary.BigEndian.Uint32(frame[8:]))
			resp = append(resp, 1, 2, 3, 4)
			binary.BigEndian.PutUint32(resp, uint32(len(resp)-4))
			if _, err := up.Write(resp); err != nil {
				return
			}
		}
	}()
	log, logs := observedLogger()
	p := startProxy(t, fakeConfig(ln.Addr().String()), log)
	c := dial(t, p.Addr().String())

	rng := rand.New(rand.NewPCG(1, 2))
	if _, err := c.Write(testRequest(rng, 32, 1, 4, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(apiVersionsRequest(max+1, 2)); err != nil {
		t.Fatal(err)
	}
	// Nothing may reach the client before the broker answers request 1.
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var b [1]byte
	if n, err := c.Read(b[:]); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %d bytes (%v) before the broker answered the request before ApiVersions", n, err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	close(release)
	frame, err := readTestFrame(c)
	if err != nil {
		t.Fatal(err)
	}
	if corr := binary.BigEndian.Uint32(frame[4:]); corr != 1 {
		t.Fatalf("first response has correlation id %d; want 1, the broker's", corr)
	}
	corr, resp := readApiVersions(t, c)
	if k := resp.ApiKeys; corr != 2 || resp.ErrorCode != errUnsupportedVersion || len(k) != 1 ||
		k[0].ApiKey != 18 || k[0].MinVersion != 0 || k[0].MaxVersion != max {
		t.Fatalf("answer to ApiVersions v%d: correlation id %d, %+v; want 2, UNSUPPORTED_VERSION and ApiVersions v0-v%d",
			max+1, corr, resp, max)
	}
	if n := logs.FilterMessageSnippet("ApiVersions request above").Len(); n != 1 {
		t.Errorf("%d log lines about it; want 1", n)
	}

	// The connection goes on: the next request is forwarded as usual.
	if _, err := c.Write(testRequest(rng, 32, 3, 4, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if frame, err := readTestFrame(c); err != nil || binary.BigEndian.Uint32(frame[4:]) != 3 {
		t.Fatalf("response to the request after ApiVersions: %x, %v; want correlation id 3", frame, err)
	}
	for range 2 {
		if frame := <-forwarded; binary.BigEndian.Uint16(frame[4:]) == 18 {
			t.Fatal("the ApiVersions request was forwarded to the broker")
		}
	}
}

// TestApiVersionsAboveKmsgKfake: against a real broker (kfake), a client
// that first asks above kmsg's version is told kmsg's, and then asking at a
// version the broker knows gets the broker's versions, clamped, on the same
// connection. (kfake closes the connection on ApiVersions v5, where Kafka
// would answer UNSUPPORTED_VERSION in turn: the retry here is v3.)
func TestApiVersionsAboveKmsgKfake(t *testing.T) {
	cluster := startKfake(t, 1)
	p := startProxy(t, testConfig(cluster.ListenAddrs()...), nil)
	c := dial(t, p.Addr().String())
	c.SetDeadline(time.Now().Add(10 * time.Second))
	max := kmsg.NewPtrApiVersionsRequest().MaxVersion()
	if _, err := c.Write(apiVersionsRequest(max+1, 1)); err != nil {
		t.Fatal(err)
	}
	_, refused := readApiVersions(t, c)
	if refused.ErrorCode != errUnsupportedVersion || len(refused.ApiKeys) != 1 || refused.ApiKeys[0].MaxVersion != max {
		t.Fatalf("answer %+v; want UNSUPPORTED_VERSION and ApiVersions up to v%d", refused, max)
	}
	const retry = 3
	if _, err := c.Write(apiVersionsRequest(retry, 2)); err != nil {
		t.Fatal(err)
	}
	frame, err := readTestFrame(c)
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(retry)
	if err := resp.ReadFrom(frame[8:]); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions v%d: error %d, %v; want the broker's versions", retry, resp.ErrorCode, err)
	}
	for _, k := range resp.ApiKeys {
		if max, capped := versionCaps[k.ApiKey]; capped && k.MaxVersion > max {
			t.Errorf("%s advertised up to v%d; want it clamped to kmsg's v%d", kmsg.NameForKey(k.ApiKey), k.MaxVersion, max)
		}
	}
}

// TestApiVersionsAboveKmsgBrokerGone: when the broker closes the connection
// while kproxy holds an ApiVersions answer back for an earlier response,
// the client connection closes too, and its goroutines end.
func TestApiVersionsAboveKmsgBrokerGone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		up, err := ln.Accept()
		if err != nil {
			return
		}
		readTestFrame(up) // the request before ApiVersions, never answered
		up.Close()
	}()
	p := startProxy(t, fakeConfig(ln.Addr().String()), zap.NewNop())
	c := dial(t, p.Addr().String())
	c.SetDeadline(time.Now().Add(10 * time.Second))
	rng := rand.New(rand.NewPCG(1, 2))
	req := append(testRequest(rng, 32, 1, 4, 0, 0), apiVersionsRequest(kmsg.NewPtrApiVersionsRequest().MaxVersion()+1, 2)...)
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	// Closed: EOF, or a reset when kproxy closed before reading all it was sent.
	if _, err := readTestFrame(c); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("client read %v; want the connection closed", err)
	}
	waitFor(t, 10*time.Second, "the connection to end", func() bool { return p.Stats().ConnectionsOpen == 0 })
}
