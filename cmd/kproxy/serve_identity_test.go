//go:build integration && browser

package main

import (
	"crypto/tls"
	"encoding/json"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/internal/headless"
	"github.com/kproxy-dev/kproxy/internal/testpki"
)

// TestServeFindingNamesMember runs a franz-go consumer through `kproxy
// serve` with mutual TLS (its certificate "CN=orders-service") and a rack,
// with a rebalance timeout not above its session timeout: the
// timeouts_misordered finding names it by client id, address, the
// software and version it announced in ApiVersions (KIP-511), its rack and
// its certificate's subject, at /api/diagnosis and in the web page's
// findings panel; once stopped, `kproxy diagnose` on the journal names it
// the same, byte for byte, and journal inspect shows the subject.
func TestServeFindingNamesMember(t *testing.T) {
	c := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(3, "t"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	ca := testpki.NewCA(t, "kproxy CA")
	dir := t.TempDir()
	server := ca.Issue(t, testpki.Spec{CN: "kproxy", IPs: []string{"127.0.0.1"}})
	client := ca.Issue(t, testpki.Spec{CN: "orders-service", Client: true})
	cfg := testConfig(t, c.ListenAddrs()...)
	cfg.Journal = filepath.Join(dir, "journal")
	cfg.TLSCert = testpki.WriteFile(t, dir, "kproxy.crt", server.CertPEM)
	cfg.TLSKey = testpki.WriteFile(t, dir, "kproxy.key", server.KeyPEM)
	cfg.TLSClientCA = testpki.WriteFile(t, dir, "ca.crt", ca.PEM)
	s, stop := startServer(t, cfg, serveHooks{})

	m := startDiagMember(t, s.proxy.Addr().String(), "g", "orders-1", []string{"t"},
		kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{client.TLSCert(t)}}),
		kgo.Rack("eu-west-1a"), kgo.SessionTimeout(3*time.Second), kgo.RebalanceTimeout(3*time.Second))
	id, _ := m.groupMeta(t)

	want := diagnose.Member{MemberID: id, ClientID: "orders-1", SoftwareName: "kgo", SoftwareVersion: franzVersion(t),
		Rack: "eu-west-1a", ClientCert: "CN=orders-service"}
	base := "http://" + s.admin.Addr().String()
	var named diagnose.Member
	deadline := time.Now().Add(15 * time.Second)
	for named.MemberID == "" {
		var doc diagnose.Document
		if err := json.Unmarshal([]byte(httpGet(t, base+"/api/diagnosis")), &doc); err != nil {
			t.Fatalf("/api/diagnosis is not JSON: %v", err)
		}
		for _, f := range doc.Findings {
			if f.Kind == diagnose.TimeoutsMisordered && len(f.Members) == 1 {
				named = f.Members[0]
			}
		}
		if named.MemberID == "" && time.Now().After(deadline) {
			t.Fatalf("no timeouts_misordered finding at /api/diagnosis: %+v", doc.Findings)
		}
		time.Sleep(100 * time.Millisecond)
	}
	want.ClientAddr = named.ClientAddr // the consumer's own port
	if named != want || !strings.HasPrefix(named.ClientAddr, "127.0.0.1:") {
		t.Errorf("the finding names its member %+v; want %+v, from 127.0.0.1", named, want)
	}

	b := headless.Start(t, headless.Options{})
	b.Run(t, 20*time.Second, chromedp.Navigate(base+"/groups/g"))
	b.WaitJS(t, "the findings panel", `document.querySelectorAll('#findings-table td.members .ident').length > 0`, 10*time.Second)
	got := headless.Eval[string](t, b, `Array.from(document.querySelectorAll('#findings-table td.members .member .ident')).map(function (d) { return d.textContent }).join(' | ')`)
	for _, w := range []string{"client orders-1", named.ClientAddr, "kgo " + want.SoftwareVersion, "rack eu-west-1a", "cert CN=orders-service", "member " + id} {
		if !strings.Contains(got, w) {
			t.Errorf("the findings panel names the member %q; want %q in it", got, w)
		}
	}

	m.stop()
	if err := stop(); err != nil {
		t.Fatalf("run() = %v; want nil", err)
	}
	sameAsJournal(t, s.obs.story.Findings(), cfg)
	// journal inspect shows the subject on the exchanges of the client's
	// connections: its JoinGroup among them.
	joins := lines(mustRun(t, "journal", "inspect", cfg.Journal, "--api", "JoinGroup"))
	if len(joins) == 0 {
		t.Fatal("journal inspect lists no JoinGroup")
	}
	for _, l := range joins {
		if !strings.Contains(l, ` client_cert="CN=orders-service" `) {
			t.Errorf("journal inspect line %q; want client_cert=\"CN=orders-service\"", l)
		}
	}
}

// franzVersion is the franz-go version this binary is built with, the one
// its clients announce in ApiVersions.
func franzVersion(t *testing.T) string {
	t.Helper()
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "github.com/twmb/franz-go" {
				return d.Version
			}
		}
	}
	t.Fatal("no franz-go in the build info")
	return ""
}
