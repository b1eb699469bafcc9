package main

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/config"
	"github.com/kproxy-dev/kproxy/proxy"
)

// reservedAddrs are the addresses kproxy listens on besides the proxy's
// own listeners, by configuration key, so that a broker listener on one of
// them is a collision the proxy can name.
func reservedAddrs(cfg config.Config) map[string]string {
	if cfg.Admin == "" {
		return nil
	}
	return map[string]string{config.KeyAdmin: cfg.Admin}
}

// checkListeners asks the brokers for their nodes before serving, and
// refuses to start when a broker listener collides with another address or
// cannot be opened (a port in use): clients would fail, or bypass kproxy.
// When no broker answers, startup goes on (the proxy keeps trying) with a
// warning.
func checkListeners(p *proxy.Proxy, cfg config.Config, log *zap.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*cfg.DialTimeout)
	defer cancel()
	err := p.CheckListeners(ctx)
	var le *proxy.ListenerError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &le):
		return err
	default:
		log.Warn("cannot check the broker listeners at startup: no broker answered; starting anyway, "+
			"collisions will be logged when the brokers are known", zap.Error(err))
		return nil
	}
}
