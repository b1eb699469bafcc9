//go:build e2e

package e2e

import (
	"testing"
	"time"
)

// TestScenario22: scenario 3's cooperative story through kproxy with TLS on
// both sides, on the broker's SASL_SSL listener whose sessions last 3 s: Java
// A authenticates with SCRAM-SHA-256, Java B with PLAIN, and both
// re-authenticate on their live connections through kproxy (KIP-368) while
// the group rebalances. The timeline tells the same two rounds; no password
// is in anything kproxy wrote or served.
func TestScenario22(t *testing.T) {
	const topic, group = "sasl_coop_topic", "test_group_22"
	pw := brokerPasswords(t)
	freshTopic(t, topic, 4, group)
	ptls := makeProxyTLS(t)
	k := startKproxyWith(t, true, reauthAddr, tlsBothSides(ptls)...)
	bs, ca := saslSide(k, ptls, reauthAddr)
	feed(t, brokerAddr, topic, 400)
	a, b := cooperativeClients(t, bs, topic, group,
		clientSecurity("SASL_SSL", ca, "SCRAM-SHA-256", "alice", pw["alice"]),
		clientSecurity("SASL_SSL", ca, "PLAIN", "bob", pw["bob"]), reauthHold)
	checkReauthenticated(t, a, b)
	if k == nil {
		return
	}
	saveAdminPages(t)
	if r := k.finish(); r != nil {
		checkCooperativeTimeline(t, r, topic, group)
	}
	checkNoSecrets(t, []string{pw["alice"], pw["bob"], pw["kproxy"]}, group, topic)
}

// reauthHold keeps both clients of scenarios 22 and 23 running past two of
// the 3 s sessions of the re-authenticating listener once the story is
// told, so that each has re-authenticated (KIP-368) at least once.
const reauthHold = 4 * time.Second

// checkReauthenticated requires each Java client to have re-authenticated
// at least once (its closed event counts them).
func checkReauthenticated(t *testing.T, clients ...*proc) {
	t.Helper()
	for _, c := range clients {
		var closed *event
		for _, e := range c.snapshot() {
			if e.Name == "closed" {
				closed = &e
			}
		}
		switch {
		case closed == nil:
			t.Errorf("%s: no closed event", c.name)
		case closed.Reauthentications < 1:
			t.Errorf("%s re-authenticated %d times on a listener whose sessions last 3 s; want at least once",
				c.name, closed.Reauthentications)
		default:
			t.Logf("%s re-authenticated %d times (KIP-368)", c.name, closed.Reauthentications)
		}
	}
}
