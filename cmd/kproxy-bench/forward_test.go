package main

import (
	"bytes"
	"io"
	"net"
	"testing"
)

// TestForward sends bytes through the forwarder to an echo server and
// checks that they come back whole, and that the client's close reaches
// the server.
func TestForward(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	closed := make(chan struct{})
	go func() {
		c, err := echo.Accept()
		if err != nil {
			return
		}
		io.Copy(c, c) //nolint:errcheck // until the forwarder closes
		c.Close()
		close(closed)
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go forward(ln, echo.Addr().String()) //nolint:errcheck // ends with ln

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("kafka "), 200_000) // more than a socket buffer
	go c.Write(want)                                //nolint:errcheck // read back below
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read back: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("bytes came back changed")
	}
	c.Close()
	<-closed
}

func TestForwarderCommand(t *testing.T) {
	got := forwarderCommand("{self} forward -listen {listen} -to {upstream}; p={listen_port} h={upstream_host} u={upstream_port} d={dir}",
		"/bin/bench", "/tmp/run", "127.0.0.1:22001", "127.0.0.1:22000")
	want := "/bin/bench forward -listen 127.0.0.1:22001 -to 127.0.0.1:22000; p=22001 h=127.0.0.1 u=22000 d=/tmp/run"
	if got != want {
		t.Fatalf("forwarderCommand = %q; want %q", got, want)
	}
}
