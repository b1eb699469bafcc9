package config

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/proxy"
)

// Limits that Validate enforces.
const (
	// MinMaxFrameSize is the smallest max-frame-size: below it not even
	// ordinary metadata requests fit.
	MinMaxFrameSize = 64 << 10
	// MaxObserverQueue bounds observer-queue: each slot may hold an
	// exchange, so a huge queue is a memory risk rather than a safety net.
	MaxObserverQueue = 1 << 20
	// MinJournalSegmentSize is the smallest journal-segment-size: smaller
	// segments would hold a few records each.
	MinJournalSegmentSize = 64 << 10
	// MinStormRebalances is the smallest storm-rebalances: one rebalance
	// is not a storm.
	MinStormRebalances = 2
)

// Validate reports every invalid setting of c, each as an *Error naming its
// key and the reason, joined with errors.Join; nil when c is valid.
func (c *Config) Validate() error {
	return c.problems().err()
}

func (c *Config) problems() problems {
	var p problems
	checkHostPort(&p, KeyListen, c.Listen, false)
	if len(c.Upstreams) == 0 {
		p.add(KeyUpstream, "", "required: at least one seed broker HOST:PORT")
	}
	for _, u := range c.Upstreams {
		checkHostPort(&p, KeyUpstream, u, true)
	}
	checkAdvertise(&p, c.Advertise)
	if c.BrokerPortBase < 0 || c.BrokerPortBase > 65535 {
		p.add(KeyBrokerPortBase, strconv.Itoa(c.BrokerPortBase), "not a port number (0-65535)")
	}
	checkBrokerListeners(&p, c.BrokerListeners)
	checkTLS(&p, c)
	if c.MaxFrameSize < MinMaxFrameSize {
		p.add(KeyMaxFrameSize, strconv.Itoa(int(c.MaxFrameSize)),
			fmt.Sprintf("below the minimum of %d bytes (64KiB)", MinMaxFrameSize))
	}
	checkPositive(&p, KeyDialTimeout, c.DialTimeout)
	checkPositive(&p, KeyShutdownTimeout, c.ShutdownTimeout)
	if c.ObserverQueue < 1 || c.ObserverQueue > MaxObserverQueue {
		p.add(KeyObserverQueue, strconv.Itoa(c.ObserverQueue),
			fmt.Sprintf("out of range (1-%d)", MaxObserverQueue))
	}
	checkJournal(&p, c)
	if c.StormRebalances < MinStormRebalances {
		p.add(KeyStormRebalances, strconv.Itoa(c.StormRebalances),
			fmt.Sprintf("below the minimum of %d (one rebalance is not a storm)", MinStormRebalances))
	}
	checkPositive(&p, KeyStormWindow, c.StormWindow)
	if c.MetricsMaxGroups < 0 {
		p.add(KeyMetricsMaxGroups, strconv.Itoa(c.MetricsMaxGroups), "negative (0 sums every group under _other)")
	}
	if err := c.TimelineRetain.Validate(); err != nil {
		p.add(KeyTimelineRetain, c.TimelineRetain.String(), err.Error())
	}
	if c.ObserverQueueBytes < MinMaxFrameSize {
		p.add(KeyObserverQueueBytes, strconv.FormatInt(c.ObserverQueueBytes, 10),
			fmt.Sprintf("below the minimum of %d bytes (64KiB)", MinMaxFrameSize))
	}
	checkLimits(&p, c)
	checkCollisions(&p, c)
	if c.Admin != "" {
		checkHostPort(&p, KeyAdmin, c.Admin, false)
	}
	switch c.LogFormat {
	case "console", "json":
	default:
		p.add(KeyLogFormat, c.LogFormat, "want console or json")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		p.add(KeyLogLevel, c.LogLevel, "want debug, info, warn or error")
	}
	checkUpstreamSASL(&p, c)
	checkFleet(&p, &c.Fleet)
	return p
}

// checkUpstreamSASL checks the upstream-sasl-* settings. The password is
// never part of a problem.
func checkUpstreamSASL(p *problems, c *Config) {
	switch c.UpstreamSASLMechanism {
	case "":
		if c.UpstreamSASLUsername != "" || c.UpstreamSASLPasswordFile != "" {
			p.add(KeyUpstreamSASLMechanism, "", "required with upstream-sasl-username or upstream-sasl-password-file: "+
				"PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
		}
		return
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		p.add(KeyUpstreamSASLMechanism, c.UpstreamSASLMechanism, "want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	}
	if c.UpstreamSASLUsername == "" {
		p.add(KeyUpstreamSASLUsername, "", "required with upstream-sasl-mechanism")
	}
	if c.UpstreamSASLPassword == "" && c.UpstreamSASLPasswordFile == "" {
		p.add(KeyUpstreamSASLPasswordFile, "", "required with upstream-sasl-mechanism (or set "+
			EnvVar(KeyUpstreamSASLPassword)+"; never a flag)")
	}
	if c.AllowOpenSASLProxy || c.TLSClientCA != "" {
		return
	}
	addrs := []string{c.Listen}
	for _, a := range c.BrokerListeners {
		addrs = append(addrs, a)
	}
	if a, open := proxy.OpenListener(addrs...); open {
		p.add(KeyUpstreamSASLMechanism, c.UpstreamSASLMechanism, fmt.Sprintf("kproxy would authenticate as %q for "+
			"anyone who reaches %s; listen on a loopback address, require client certificates (tls-client-ca), "+
			"or set allow-open-sasl-proxy", c.UpstreamSASLUsername, a))
	}
}

// checkHostPort checks a HOST:PORT. A dialed address (dial) needs a host
// and a non-zero port; a listen address may leave the host empty (every
// interface) and use port 0 (any free port).
func checkHostPort(p *problems, key, addr string, dial bool) {
	if addr == "" {
		p.add(key, "", "empty; want HOST:PORT")
		return
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		p.add(key, addr, hostPortReason(err))
		return
	}
	if dial && host == "" {
		p.add(key, addr, "missing host")
		return
	}
	if strings.ContainsAny(host, " \t") {
		p.add(key, addr, "host contains a space")
		return
	}
	n, err := strconv.Atoi(port)
	lowest := 0
	if dial {
		lowest = 1
	}
	if err != nil || n < lowest || n > 65535 {
		p.add(key, addr, fmt.Sprintf("port %q is not a number in %d-65535", port, lowest))
	}
}

// hostPortReason turns net.SplitHostPort's error into a short reason.
func hostPortReason(err error) string {
	if ae, ok := err.(*net.AddrError); ok {
		switch ae.Err {
		case "missing port in address":
			return "missing port"
		case "too many colons in address":
			return "too many colons (write an IPv6 host as [::1]:9092)"
		}
		return ae.Err
	}
	return err.Error()
}

func checkAdvertise(p *problems, host string) {
	switch {
	case host == "":
	case strings.ContainsAny(host, " \t/"):
		p.add(KeyAdvertise, host, "not a host name or IP address")
	case validHostPort(host):
		p.add(KeyAdvertise, host, "want a host without a port (ports come from listen and broker-port-base)")
	}
}

func validHostPort(s string) bool {
	_, _, err := net.SplitHostPort(s)
	return err == nil
}

func checkBrokerListeners(p *problems, m map[int32]string) {
	ids := make([]int32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	seen := make(map[string]int32, len(m))
	for _, id := range ids {
		key := KeyBrokerListeners + "." + strconv.Itoa(int(id))
		addr := m[id]
		if id < 0 {
			p.add(key, addr, "node id must not be negative")
			continue
		}
		before := len(*p)
		checkHostPort(p, key, addr, false)
		if len(*p) > before {
			continue
		}
		// Port 0 asks for any free port, so it cannot clash.
		if _, port, _ := net.SplitHostPort(addr); port == "0" {
			continue
		}
		if other, dup := seen[addr]; dup {
			p.add(key, addr, fmt.Sprintf("same address as node %d", other))
			continue
		}
		seen[addr] = id
	}
}

func checkPositive(p *problems, key string, d time.Duration) {
	if d <= 0 {
		p.add(key, d.String(), "must be positive")
	}
}

// checkJournal checks the journal-* settings, whether or not the journal is
// on, so that a mistake shows before the day it is turned on.
func checkJournal(p *problems, c *Config) {
	if f := c.JournalOptions.Fsync; f < journal.FsyncNever || (f > 0 && time.Duration(f) < time.Millisecond) {
		p.add(KeyJournalFsync, time.Duration(f).String(), "want always, never or an interval of at least 1ms")
	}
	if c.JournalOptions.SegmentBytes < MinJournalSegmentSize {
		p.add(KeyJournalSegmentSize, strconv.FormatInt(c.JournalOptions.SegmentBytes, 10),
			fmt.Sprintf("below the minimum of %d bytes (64KiB)", MinJournalSegmentSize))
	}
	checkNotNegative(p, KeyJournalSegmentAge, c.JournalOptions.SegmentAge, "never by age")
	switch {
	case c.JournalOptions.RetainBytes < 0:
		p.add(KeyJournalRetainSize, strconv.FormatInt(c.JournalOptions.RetainBytes, 10), "must not be negative (0 means no limit)")
	case c.JournalOptions.RetainBytes > 0 && c.JournalOptions.RetainBytes < c.JournalOptions.SegmentBytes:
		p.add(KeyJournalRetainSize, strconv.FormatInt(c.JournalOptions.RetainBytes, 10),
			fmt.Sprintf("smaller than journal-segment-size (%d bytes): not even one whole segment would be kept; 0 means no limit",
				c.JournalOptions.SegmentBytes))
	}
	checkNotNegative(p, KeyJournalRetainAge, c.JournalOptions.RetainAge, "no limit")
}

// checkNotNegative checks a duration whose 0 means zeroMeans.
func checkNotNegative(p *problems, key string, d time.Duration, zeroMeans string) {
	if d < 0 {
		p.add(key, d.String(), "must not be negative (0 means "+zeroMeans+")")
	}
}
