package diagnose

import (
	"strings"
	"testing"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/timeline"
)

// TestFindingNamesMember: a finding names its member by what its
// connection said of itself (software in ApiVersions, the certificate of
// mutual TLS) and the rack its subscription names; a member whose
// connection said nothing is named by its ids alone.
func TestFindingNamesMember(t *testing.T) {
	s := newScript("g")
	s.rebalance = s.session // timeouts_misordered, at each member's JoinGroup
	s.software(cA, 0, "kgo", "v1.22.3")
	s.items[len(s.items)-1].x.ClientCert = "CN=orders,OU=payments,O=Acme Corp"
	ja := s.jg("A-1", 1, "A-1", "A-1")
	ja.Protocols[0].Subscription = &decode.Subscription{Version: 3, Topics: []string{"t"}, Generation: -1, Rack: "eu-west-1a"}
	s.join(cA, 0.1, 0.2, ja)
	s.session *= 2 // B's JoinGroup: another pair of timeouts, another finding
	s.rebalance = s.session
	s.join(cB, 5, 5.1, s.jg("B-1", 2, "A-1"))
	fs, _ := diagnoseScript(t, Config{}, s, 10)
	got := map[string]Member{}
	for _, f := range fs {
		if f.Kind == TimeoutsMisordered {
			got[f.Members[0].MemberID] = f.Members[0]
			if f.Members[0].MemberID == "A-1" {
				text := TextBlock(f)
				if want := `10.0.0.1:4001 software kgo v1.22.3 rack eu-west-1a cert "CN=orders,OU=payments,O=Acme Corp"`; !strings.Contains(text, want) {
					t.Errorf("text finding:\n%s\nwant its member line to end %s", text, want)
				}
			}
		}
	}
	want := map[string]Member{
		"A-1": {MemberID: "A-1", ClientID: cA.id, ClientAddr: cA.addr, SoftwareName: "kgo", SoftwareVersion: "v1.22.3",
			Rack: "eu-west-1a", ClientCert: "CN=orders,OU=payments,O=Acme Corp"},
		"B-1": {MemberID: "B-1", ClientID: cB.id, ClientAddr: cB.addr},
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("timeouts_misordered names %s as %+v; want %+v", id, got[id], w)
		}
	}
}

// TestKIP848MemberNamedFromItsConnection: a KIP-848 member, whose
// heartbeats the diagnosis does not follow one by one, is named from the
// connection at its address and the rack of its heartbeats.
func TestKIP848MemberNamedFromItsConnection(t *testing.T) {
	s := newScript("g")
	s.software(cA, 0, "apache-kafka-java", "4.1.0")
	s.items[len(s.items)-1].x.ClientCert = "CN=billing"
	rack := "us-east-1b"
	s.ev(cA, 68, 0.1, 0.2).ConsumerGroupHeartbeat = &decode.ConsumerGroupHeartbeat{MemberID: "K-1", MemberEpoch: 0, RackID: &rack,
		SubscribedTopicNames: []string{"t"}, AssignedEpoch: 1, Assignment: []decode.TopicIDPartitions{}}
	d := New(Config{}, timeline.Config{})
	for _, it := range s.ordered() {
		feed(d, it)
	}
	f := Finding{Group: "g", Members: []Member{{MemberID: "K-1", ClientID: cA.id, ClientAddr: cA.addr}}}
	kept := f.Members
	d.name(&f)
	want := Member{MemberID: "K-1", ClientID: cA.id, ClientAddr: cA.addr, SoftwareName: "apache-kafka-java", SoftwareVersion: "4.1.0",
		Rack: rack, ClientCert: "CN=billing"}
	if f.Members[0] != want {
		t.Errorf("named %+v; want %+v", f.Members[0], want)
	}
	if kept[0].SoftwareName != "" {
		t.Error("naming wrote into the finding kept; want a copy")
	}
}

// TestLiveWarningNamesMember: a live warning, told as its threshold
// passes, names its member as the findings do.
func TestLiveWarningNamesMember(t *testing.T) {
	s := sessionTimeout()
	s.software(cB, 0, "librdkafka", "2.3.0")
	_, live := diagnoseScript(t, Config{}, s, 60)
	var told bool
	for _, f := range live {
		if f.Kind == SessionTimeoutWarning {
			told = true
			if m := f.Members[0]; m.MemberID != "B-1" || m.SoftwareName != "librdkafka" || m.SoftwareVersion != "2.3.0" {
				t.Errorf("the warning names %+v; want B-1 running librdkafka 2.3.0", m)
			}
		}
	}
	if !told {
		t.Fatalf("no session_timeout_warning told: %+v", live)
	}
}
