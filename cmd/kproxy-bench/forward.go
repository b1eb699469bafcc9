package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
)

// runForward is `kproxy-bench forward`: the smallest TCP forwarder, the
// floor a proxy is measured against (-forwarder). For each connection it
// dials -to and copies both ways with io.Copy, a goroutine each way, until
// either side ends. It rewrites nothing, so its clients dial it for every
// broker (`kproxy-bench client -dial`). It prints its address on stdout.
func runForward(args []string) error {
	fs := flag.NewFlagSet("forward", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	to := fs.String("to", "", "address to forward every connection to")
	fs.Parse(args) //nolint:errcheck // ExitOnError
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	fmt.Println(ln.Addr())
	return forward(ln, *to)
}

// forward serves ln until it closes, forwarding each connection to to.
func forward(ln net.Listener, to string) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return fmt.Errorf("accept: %w", err)
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("tcp", to)
			if err != nil {
				fmt.Fprintln(os.Stderr, "kproxy-bench forward:", err)
				return
			}
			defer u.Close()
			go func() { io.Copy(u, c); u.Close() }() //nolint:errcheck // ends with either side
			io.Copy(c, u)                            //nolint:errcheck // ends with either side
		}()
	}
}

// forwarderCommand fills the placeholders of a -forwarder command:
// {self} (this binary), {dir} (the run's directory), {listen} and
// {listen_port} (where the forwarder listens), {upstream},
// {upstream_host} and {upstream_port} (the broker).
func forwarderCommand(command, self, dir, listen, upstream string) string {
	_, lport, _ := net.SplitHostPort(listen)
	uhost, uport, _ := net.SplitHostPort(upstream)
	return strings.NewReplacer("{self}", self, "{dir}", dir, "{listen}", listen, "{listen_port}", lport,
		"{upstream}", upstream, "{upstream_host}", uhost, "{upstream_port}", uport).Replace(command)
}
