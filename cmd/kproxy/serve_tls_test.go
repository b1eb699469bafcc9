package main

import (
	"context"
	"crypto/tls"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kproxy-dev/kproxy/internal/testpki"
)

// TestServeTLSBothSides runs `kproxy serve` as main does with TLS on both
// sides (the brokers' certificates left unverified, kproxy's client
// certificate required by them): a TLS client produces through it,
// /healthz warns about the unverified brokers, and a real SIGHUP reloads
// the replaced certificate files of both sides.
func TestServeTLSBothSides(t *testing.T) {
	brokerCA := testpki.NewCA(t, "cluster CA")
	brokerCert := brokerCA.Issue(t, testpki.Spec{CN: "broker", IPs: []string{"127.0.0.1"}})
	var seenMu sync.Mutex
	var seen *big.Int // the serial of the last client certificate the broker accepted
	brokerSaw := func() *big.Int {
		seenMu.Lock()
		defer seenMu.Unlock()
		return seen
	}
	c := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "t"),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{brokerCert.TLSCert(t)},
			ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: brokerCA.Pool(),
			VerifyConnection: func(cs tls.ConnectionState) error {
				seenMu.Lock()
				defer seenMu.Unlock()
				seen = cs.PeerCertificates[0].SerialNumber
				return nil
			}}))
	firstClient := brokerCA.Issue(t, testpki.Spec{CN: "kproxy 1", Client: true})
	ca := testpki.NewCA(t, "kproxy CA")
	dir := t.TempDir()
	first := ca.Issue(t, testpki.Spec{CN: "first", IPs: []string{"127.0.0.1"}})
	certFile := testpki.WriteFile(t, dir, "kproxy.crt", first.CertPEM)
	keyFile := testpki.WriteFile(t, dir, "kproxy.key", first.KeyPEM)
	upCertFile := testpki.WriteFile(t, dir, "upstream.crt", firstClient.CertPEM)
	upKeyFile := testpki.WriteFile(t, dir, "upstream.key", firstClient.KeyPEM)
	admin, listen := freeAddr(t), freeAddr(t)
	cfgFile := anyPortBrokerConfig(t)
	done := make(chan error, 1)
	go func() {
		_, err := runKproxy(t, "serve", "--upstream", c.ListenAddrs()[0], "--listen", listen,
			"--admin", admin, "--log-level", "error", "--config", cfgFile,
			"--tls-cert", certFile, "--tls-key", keyFile, "--tls-reload-interval", "1h",
			"--upstream-tls", "--upstream-insecure-skip-verify", "--upstream-cert", upCertFile, "--upstream-key", upKeyFile)
		done <- err
	}()
	stopped := false
	t.Cleanup(func() {
		if stopped {
			return
		}
		syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve after SIGTERM = %v; want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop after SIGTERM")
		}
	})
	// The signal handlers are installed before the admin server answers.
	var health string
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + admin + "/healthz")
		if err == nil {
			resp.Body.Close()
			health = httpGet(t, "http://"+admin+"/healthz")
			break
		}
		select {
		case err := <-done:
			stopped = true
			t.Fatalf("serve returned before serving: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("admin server never answered: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.HasPrefix(health, "ok\nwarning: INSECURE: upstream-insecure-skip-verify is set") {
		t.Errorf("/healthz = %q; want ok and the insecure upstream warning", health)
	}

	clientTLS := &tls.Config{RootCAs: ca.Pool()}
	produce := func() {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(listen), kgo.DefaultProduceTopic("t"), kgo.DialTLSConfig(clientTLS))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("TLS both sides")}).FirstErr(); err != nil {
			t.Fatalf("produce through kproxy: %v", err)
		}
	}
	produce()
	if got := brokerSaw(); got == nil || got.Cmp(firstClient.Serial) != 0 {
		t.Fatalf("the broker saw client certificate %v; want %v", got, firstClient.Serial)
	}

	served := func() *big.Int {
		tc, err := tls.Dial("tcp", listen, clientTLS)
		if err != nil {
			t.Fatalf("dial kproxy: %v", err)
		}
		defer tc.Close()
		return tc.ConnectionState().PeerCertificates[0].SerialNumber
	}
	second := ca.Issue(t, testpki.Spec{CN: "second", IPs: []string{"127.0.0.1"}})
	testpki.WriteFile(t, dir, "kproxy.crt", second.CertPEM)
	testpki.WriteFile(t, dir, "kproxy.key", second.KeyPEM)
	secondClient := brokerCA.Issue(t, testpki.Spec{CN: "kproxy 2", Client: true})
	testpki.WriteFile(t, dir, "upstream.crt", secondClient.CertPEM)
	testpki.WriteFile(t, dir, "upstream.key", secondClient.KeyPEM)
	if got := served(); got.Cmp(first.Serial) != 0 {
		t.Fatalf("before SIGHUP, kproxy served serial %v; want %v (the reload interval is an hour)", got, first.Serial)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for served().Cmp(second.Serial) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("SIGHUP did not reload the certificate")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The one signal reloads both sides: new broker connections present
	// the new client certificate (each produce is a new client, so new
	// broker connections).
	for produce(); brokerSaw().Cmp(secondClient.Serial) != 0; produce() {
		if time.Now().After(deadline) {
			t.Fatalf("after SIGHUP, the broker saw client certificate %v; want the new one, %v", brokerSaw(), secondClient.Serial)
		}
	}
}
