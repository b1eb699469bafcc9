//go:build e2e

package e2e

import (
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// saslSide is where a SASL scenario's clients connect and which CA they
// trust: kproxy's TLS listener and its CA, or, with E2E_MODE=direct, the
// broker's listener at direct and the cluster's CA.
func saslSide(k *kproxy, p proxyTLS, direct string) (bootstrap, ca string) {
	if k == nil {
		return direct, filepath.Join(brokerTLSDir, "ca.pem")
	}
	return proxyListen, p.CA
}

// TestScenario21: scenario 1's story on a production-like cluster, through
// kproxy with TLS on both sides, the clients authenticating as themselves
// through it: kafka-python A with SCRAM-SHA-256, confluent-kafka B with
// PLAIN, range, on the broker's SASL_SSL listener. A owns sasl_topic 0,1,2;
// B joins; A commits from its revocation; A keeps 0,1 and B gets 2. The
// timeline tells it as for plaintext clients, and none of the passwords is
// in anything kproxy wrote or served.
func TestScenario21(t *testing.T) {
	const topic, group = "sasl_topic", "test_group_21"
	pw := brokerPasswords(t)
	freshTopic(t, topic, 3, group)
	ptls := makeProxyTLS(t)
	k := startKproxyWith(t, true, saslSSLAddr, tlsBothSides(ptls)...)
	bs, ca := saslSide(k, ptls, saslSSLAddr)
	feed(t, brokerAddr, topic, 600)

	common := []string{"--bootstrap", bs, "--group", group, "--topic", topic}
	a := kafkaPythonEnv(t, "kafka-python-A", clientSecurity("SASL_SSL", ca, "SCRAM-SHA-256", "alice", pw["alice"]),
		append(common, "--client-id", "sasl-A", "--work-ms", "1000", "--max-poll-records", "10")...)
	a.waitFor(0, 60*time.Second, "A owning sasl_topic 0,1,2", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Partitions), parts(topic, 0, 1, 2))
	})
	a.waitFor(0, 30*time.Second, "A's first batch", func(e event) bool { return e.Name == "polled" })
	markA := a.mark()
	b := confluentKafkaEnv(t, "confluent-B", clientSecurity("SASL_SSL", ca, "PLAIN", "bob", pw["bob"]),
		append(common, "--client-id", "sasl-B", "--assignor", "range", "--work-ms", "200")...)
	b.waitFor(0, 60*time.Second, "B owning sasl_topic 2", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Partitions), parts(topic, 2))
	})
	commit := a.waitFor(markA, 20*time.Second, "A's commit from on_partitions_revoked", func(e event) bool { return e.Name == "commit" })
	if commit.Error != "" {
		t.Fatalf("A's commit during revocation failed: %s", commit)
	}
	a.waitFor(markA, 30*time.Second, "A owning sasl_topic 0,1", func(e event) bool {
		return e.Name == "assigned" && slices.Equal(all(e.Partitions), parts(topic, 0, 1))
	})
	b.waitFor(0, 30*time.Second, "B's first batch", func(e event) bool { return e.Name == "polled" })
	b.stop(60 * time.Second)
	a.stop(60 * time.Second)
	if k == nil {
		return
	}
	saveAdminPages(t)
	r := k.finish()
	if r != nil {
		g := r.group(t, group)
		first, i := g.mustFind(t, 0, "sasl-A")
		if got := all(first.member("sasl-A").Assignment); !slices.Equal(got, parts(topic, 0, 1, 2)) {
			t.Errorf("gen %d: A's assignment %v; want 0,1,2", first.Generation, got)
		}
		second, _ := g.mustFind(t, i+1, "sasl-A", "sasl-B")
		ma, mb := second.member("sasl-A"), second.member("sasl-B")
		if got := all(ma.Assignment); !slices.Equal(got, parts(topic, 0, 1)) {
			t.Errorf("gen %d: A's assignment %v; want 0,1", second.Generation, got)
		}
		if got := all(mb.Assignment); !slices.Equal(got, parts(topic, 2)) {
			t.Errorf("gen %d: B's assignment %v; want 2", second.Generation, got)
		}
		if second.Protocol != "range" || second.Mode != "eager" {
			t.Errorf("gen %d: protocol %q mode %q; want range, eager", second.Generation, second.Protocol, second.Mode)
		}
		if second.Trigger.Kind != "member_joined" || second.Trigger.Member != mb.MemberID {
			t.Errorf("gen %d: trigger %+v; want member_joined by B %q", second.Generation, second.Trigger, mb.MemberID)
		}
		var ok bool
		for _, c := range second.CommitsDuringRevocation {
			ok = ok || (c.MemberID == ma.MemberID && c.Result == "ok")
		}
		if !ok {
			t.Errorf("gen %d: no successful commit during revocation by A in the timeline", second.Generation)
		}
	}
	checkNoSecrets(t, []string{pw["alice"], pw["bob"], pw["kproxy"]}, group, topic)
}
