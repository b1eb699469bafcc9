package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/proxy"
)

// adminServer is the admin HTTP server: /metrics (Prometheus text format)
// and /healthz. It listens on loopback unless configured otherwise.
type adminServer struct {
	ln  net.Listener
	srv *http.Server
	log *zap.Logger
}

// newAdminServer opens the admin listener at addr, so that a busy port
// fails serve before the proxy starts. stats is called for each /metrics.
func newAdminServer(addr string, stats func() proxy.Stats, log *zap.Logger) (*adminServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin: listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		if err := writeMetrics(w, stats()); err != nil {
			log.Debug("admin: write metrics", zap.Error(err))
		}
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	return &adminServer{
		ln:  ln,
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second},
		log: log,
	}, nil
}

// Addr is the address the admin server listens on.
func (a *adminServer) Addr() net.Addr { return a.ln.Addr() }

// serve serves until shutdown is called.
func (a *adminServer) serve() {
	a.log.Info("admin listening", zap.String("metrics", "http://"+a.ln.Addr().String()+"/metrics"))
	if err := a.srv.Serve(a.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		a.log.Error("admin server stopped", zap.Error(err))
	}
}

// shutdown stops the server, letting requests in progress finish for a
// short while.
func (a *adminServer) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := a.srv.Shutdown(ctx); err != nil {
		a.srv.Close()
	}
}
