//go:build unix

package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// floodChildEnv makes the test binary run floodChild instead of the tests.
const floodChildEnv = "KPROXY_FD_FLOOD_CHILD"

// floodFdLimit is the child's file-descriptor limit: DefaultMaxConnections
// makes it (512-256)/2 = 128 connections.
const floodFdLimit = 512

// TestMain runs the flood child when asked to, the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(floodChildEnv) != "" {
		floodChild()
		return
	}
	os.Exit(m.Run())
}

// floodChild runs a proxy with the default connection limit under a low
// file-descriptor limit, and a stand-in for the admin server that answers
// with the proxy's stats. It prints both addresses and runs until its
// standard input closes.
func floodChild() {
	lim := syscall.Rlimit{Cur: floodFdLimit, Max: floodFdLimit}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Println("setrlimit:", err)
		os.Exit(1)
	}
	up, err := net.Listen("tcp", "127.0.0.1:0") // never dialled: the flood sends nothing
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	p, err := New(Config{Listen: "127.0.0.1:0", Upstreams: []string{up.Addr().String()}, DisableBrokerDiscovery: true}, nil)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	admin, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	go http.Serve(admin, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(p.Stats())
	}))
	go p.Run(context.Background())
	fmt.Println(p.Addr(), admin.Addr())
	bufio.NewReader(os.Stdin).ReadByte()
}

// TestIdleFlood: a thousand idle connections against a proxy whose file
// descriptors allow 128 client connections (the default derived from the
// limit): past them connections are reset at once, none makes accept fail
// (out of descriptors), and the admin stand-in keeps answering at once.
func TestIdleFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("opens a thousand connections")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), floodChildEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	addrs := strings.Fields(line)
	if len(addrs) != 2 {
		t.Fatalf("child said %q; want the proxy and admin addresses", line)
	}
	proxyAddr, adminAddr := addrs[0], addrs[1]

	const flood = 1000
	const want = (floodFdLimit - fdReserve) / 2
	for range flood {
		c, err := net.DialTimeout("tcp", proxyAddr, 5*time.Second)
		if errors.Is(err, syscall.ECONNRESET) {
			continue // refused so fast that the dial saw it
		}
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		t.Cleanup(func() { c.Close() })
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	stats := func() Stats {
		t.Helper()
		start := time.Now()
		resp, err := hc.Get("http://" + adminAddr + "/")
		if err != nil {
			t.Fatalf("admin under flood: %v", err)
		}
		defer resp.Body.Close()
		var s Stats
		if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
			t.Fatal(err)
		}
		t.Logf("admin answered in %v", time.Since(start).Round(time.Microsecond))
		return s
	}
	waitFor(t, 10*time.Second, "every connection accepted or refused", func() bool {
		s := stats()
		return s.ConnectionsTotal+s.ConnectionsRefused == flood
	})
	s := stats()
	if s.ConnectionsOpen != want || s.ConnectionsRefused != flood-want || s.AcceptErrors != 0 {
		t.Errorf("open %d, refused %d, accept errors %d; want %d, %d, 0", s.ConnectionsOpen, s.ConnectionsRefused,
			s.AcceptErrors, want, flood-want)
	}
	// A new client is refused at once, not left hanging.
	c, err := net.Dial("tcp", proxyAddr)
	if errors.Is(err, syscall.ECONNRESET) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	expectRefused(t, c)
}
