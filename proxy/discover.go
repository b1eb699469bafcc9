package proxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/decode"
)

// Backoff between broker discovery attempts: it doubles from the first
// value up to the second.
const (
	discoveryMinBackoff = 500 * time.Millisecond
	discoveryMaxBackoff = 30 * time.Second
)

// discoverBrokers learns every broker node from a seed broker's Metadata
// and opens their listeners, so that clients that kept kproxy's node
// addresses (across a kproxy restart) can connect before any client
// bootstraps again. It tries every seed, then waits and tries again, with
// backoff, until one answers or ctx is done. Failures are logged, never
// fatal: listeners also open as clients' responses name nodes. A broker
// that wants authentication first (SASL) is not asked again: kproxy has no
// credentials of its own.
func (p *Proxy) discoverBrokers(ctx context.Context) {
	delay := discoveryMinBackoff
	for attempt := 1; ; attempt++ {
		nodes, err := p.discoverOnce(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			p.log.Info("broker nodes discovered", zap.Int("nodes", nodes), zap.Int("attempts", attempt))
			return
		case errors.Is(err, errNeedsAuth):
			p.log.Warn("broker discovery stopped: the broker closed the connection when asked for Metadata "+
				"without authentication, as SASL listeners do, and kproxy has no credentials; node listeners "+
				"open as clients' responses name nodes, so clients that kept node addresses across a kproxy "+
				"restart bootstrap again first", zap.Error(err))
			return
		case attempt == 1:
			p.log.Warn("broker discovery failed; node listeners open as clients' responses name nodes; "+
				"retrying in the background with backoff (further failures are logged at debug level)",
				zap.Strings("upstreams", p.cfg.Upstreams), zap.Duration("retry_in", delay), zap.Error(err))
		default:
			p.log.Debug("broker discovery failed; retrying", zap.Int("attempt", attempt),
				zap.Duration("retry_in", delay), zap.Error(err))
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, discoveryMaxBackoff)
	}
}

// errNeedsAuth marks a broker that answered ApiVersions and then closed
// the connection on Metadata: a SASL listener before authentication.
var errNeedsAuth = errors.New("the broker closed the connection on Metadata before authentication")

// discoverOnce asks each seed in turn until one answers, and routes every
// broker node it names. It returns how many nodes that was.
func (p *Proxy) discoverOnce(ctx context.Context) (int, error) {
	var errs []error
	for _, addr := range p.cfg.Upstreams {
		brokers, err := p.fetchBrokers(ctx, addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		for _, b := range brokers {
			p.route(b.NodeID, hostPort(b.Host, b.Port))
		}
		return len(brokers), nil
	}
	return 0, errors.Join(errs...)
}

// fetchBrokers connects to a broker and asks it for ApiVersions (v0, which
// every broker answers), then for Metadata without topics at the highest
// version both it and kmsg know. Each request is bounded by DialTimeout,
// and everything stops when ctx is done.
func (p *Proxy) fetchBrokers(ctx context.Context, addr string) ([]kmsg.MetadataResponseBroker, error) {
	nc, err := p.dialBroker(ctx, addr)
	if err != nil {
		if ctx.Err() == nil {
			p.stats.dialFailures.Add(1)
		}
		return nil, err
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	if p.cfg.UpstreamSASL.Enabled() {
		if _, err := p.authenticateNew(ctx, nc, addr); err != nil {
			return nil, fmt.Errorf("upstream SASL: %w", err)
		}
	}
	br := bufio.NewReaderSize(nc, readBufSize)

	av := kmsg.NewPtrApiVersionsRequest()
	avResp, err := p.discoveryRequest(nc, br, av, 0)
	if err != nil {
		return nil, err
	}
	versions := avResp.(*kmsg.ApiVersionsResponse)
	if versions.ErrorCode != 0 {
		return nil, fmt.Errorf("ApiVersions: error %s", decode.ErrorName(versions.ErrorCode))
	}
	meta := kmsg.NewPtrMetadataRequest()
	v, ok := metadataVersion(versions, meta.MaxVersion())
	if !ok {
		return nil, errors.New("the broker supports no Metadata version kproxy knows")
	}
	meta.SetVersion(v)
	meta.Topics = []kmsg.MetadataRequestTopic{} // none (v1+); null would mean all
	resp, err := p.discoveryRequest(nc, br, meta, 1)
	if err != nil {
		if ctx.Err() == nil && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
			err = fmt.Errorf("%w: Metadata v%d: %w", errNeedsAuth, v, err)
		}
		return nil, err
	}
	brokers := resp.(*kmsg.MetadataResponse).Brokers
	if len(brokers) == 0 {
		return nil, fmt.Errorf("Metadata v%d: no brokers", v)
	}
	return brokers, nil
}

// metadataVersion picks the highest Metadata version the broker and kmsg
// both support.
func metadataVersion(resp *kmsg.ApiVersionsResponse, kmsgMax int16) (int16, bool) {
	for _, k := range resp.ApiKeys {
		if k.ApiKey == int16(kmsg.Metadata) {
			v := min(k.MaxVersion, kmsgMax)
			return v, v >= k.MinVersion
		}
	}
	return 0, false
}

// discoveryRequest writes req and reads its response, within DialTimeout.
func (p *Proxy) discoveryRequest(nc net.Conn, br *bufio.Reader, req kmsg.Request, corr int32) (kmsg.Response, error) {
	nc.SetDeadline(time.Now().Add(p.cfg.DialTimeout))
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kproxy")).AppendRequest(nil, req, corr)
	if _, err := nc.Write(frame); err != nil {
		return nil, err
	}
	prefix, size, err := frameSize(br)
	if err != nil {
		return nil, err
	}
	if size < 4 || size > p.cfg.MaxFrameSize {
		return nil, fmt.Errorf("%s response frame of %d bytes (prefix %s)", decode.APIName(req.Key()), size, describePrefix(prefix))
	}
	resp, err := readFrame(br, prefix, size)
	if err != nil {
		return nil, err
	}
	body := resp[4:]
	hl, err := decode.ResponseHeaderLen(req.Key(), req.GetVersion(), body)
	if err != nil {
		return nil, err
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		return nil, fmt.Errorf("%s response correlation id %d; want %d", decode.APIName(req.Key()), got, corr)
	}
	return parseResponse(req.Key(), req.GetVersion(), body[hl:])
}
