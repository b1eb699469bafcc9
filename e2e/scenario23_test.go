//go:build e2e

package e2e

import (
	"testing"
)

// TestScenario23: scenario 4's KIP-848 story (group.protocol=consumer)
// through kproxy with TLS on both sides, on the SASL_SSL listener whose
// sessions last 3 s: Java A with SCRAM-SHA-256 and Java B with PLAIN
// re-authenticate through kproxy while B takes two of A's partitions. The
// timeline tells the same epochs; no password is in what kproxy wrote or
// served.
func TestScenario23(t *testing.T) {
	const topic, group = "sasl_kip848_topic", "test_group_23"
	pw := brokerPasswords(t)
	freshTopic(t, topic, 4, group)
	ptls := makeProxyTLS(t)
	k := startKproxyWith(t, true, reauthAddr, tlsBothSides(ptls)...)
	bs, ca := saslSide(k, ptls, reauthAddr)
	feed(t, brokerAddr, topic, 400)
	a, b, moved := kip848Clients(t, bs, topic, group,
		clientSecurity("SASL_SSL", ca, "SCRAM-SHA-256", "alice", pw["alice"]),
		clientSecurity("SASL_SSL", ca, "PLAIN", "bob", pw["bob"]), reauthHold)
	checkReauthenticated(t, a, b)
	if k == nil {
		return
	}
	saveAdminPages(t)
	if r := k.finish(); r != nil {
		checkKIP848Timeline(t, r, topic, group, moved, a, b)
	}
	checkNoSecrets(t, []string{pw["alice"], pw["bob"], pw["kproxy"]}, group, topic)
}
