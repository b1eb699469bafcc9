package timeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kproxy-dev/kproxy/decode"
)

// rackSub is a ConsumerProtocolSubscription v3 (KIP-881) of round_topic
// carrying rack.
func rackSub(rack string) *decode.Subscription {
	sub := consumerSub("round_topic")
	sub.Version, sub.Rack = 3, rack
	return sub
}

// jsonRacks reads back, from the JSON rendering of r, the rack of each
// member of each generation of group, by "gen/member", and of each KIP-848
// member, by member id.
func jsonRacks(t *testing.T, r *Report, group string) map[string]string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	var doc struct {
		Groups []struct {
			Group       string `json:"group"`
			Generations []struct {
				Generation int32 `json:"generation"`
				Members    []struct {
					MemberID string  `json:"memberId"`
					Rack     *string `json:"rack"`
				} `json:"members"`
			} `json:"generations"`
			ConsumerMembers []struct {
				MemberID string  `json:"memberId"`
				Rack     *string `json:"rack"`
			} `json:"consumerMembers"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("report JSON: %v\n%s", err, b.String())
	}
	racks := map[string]string{}
	for _, g := range doc.Groups {
		if g.Group != group {
			continue
		}
		for _, gen := range g.Generations {
			for _, m := range gen.Members {
				if m.Rack == nil {
					t.Fatalf("gen %d member %s: no \"rack\" field in the JSON", gen.Generation, m.MemberID)
				}
				racks[fmt.Sprintf("%d/%s", gen.Generation, m.MemberID)] = *m.Rack
			}
		}
		for _, m := range g.ConsumerMembers {
			if m.Rack == nil {
				t.Fatalf("consumer member %s: no \"rack\" field in the JSON", m.MemberID)
			}
			racks[m.MemberID] = *m.Rack
		}
	}
	return racks
}

// TestRackInReport checks that a member's rack (issue 3, item 5) reaches
// the member report, the JSON and the text report, whether kproxy saw it in
// the member's own JoinGroup or only in the leader's member list, and for
// KIP-848 members from ConsumerGroupHeartbeat's RackID.
func TestRackInReport(t *testing.T) {
	classic := func(seeB bool) *script {
		s := newScript("racks")
		lead := jg("A-1", 1, "A-1", "A-1", "B-1")
		lead.Protocols[0].Subscription = rackSub("rack-a")
		lead.Members[0].Subscription = rackSub("rack-a")
		lead.Members[1].Subscription = rackSub("rack-b")
		s.join(cA, 0, 0.010, lead)
		if seeB {
			follower := jg("B-1", 1, "A-1")
			follower.Protocols[0].Subscription = rackSub("rack-b")
			s.join(cB, 0.001, 0.010, follower)
		}
		plan := map[string][]decode.TopicPartitions{"A-1": tp("round_topic", 0, 1), "B-1": tp("round_topic", 2)}
		s.sync(cA, 0.011, 0.012, "A-1", 1, plan["A-1"], plan)
		if seeB {
			s.sync(cB, 0.011, 0.013, "B-1", 1, plan["B-1"], nil)
		}
		return s
	}
	tests := []struct {
		name   string
		script *script
		group  string
		// want is the rack by "gen/member" (classic) or member id (KIP-848).
		want map[string]string
		// text are lines the text report must contain.
		text []string
	}{
		{
			name:   "classic, both JoinGroups seen",
			script: classic(true),
			group:  "racks",
			want:   map[string]string{"1/A-1": "rack-a", "1/B-1": "rack-b"},
			text:   []string{"subscribed [round_topic] rack rack-a", "subscribed [round_topic] rack rack-b"},
		},
		{
			name:   "classic, follower known only from the leader's member list",
			script: classic(false),
			group:  "racks",
			want:   map[string]string{"1/A-1": "rack-a", "1/B-1": "rack-b"},
			text:   []string{"A-1 [joined]", "rack rack-a", "B-1", "rack rack-b"},
		},
		{
			name: "classic, no rack",
			script: func() *script {
				s := newScript("racks")
				s.join(cA, 0, 0.010, jg("A-1", 1, "A-1", "A-1"))
				all := tp("round_topic", 0, 1, 2)
				s.sync(cA, 0.011, 0.012, "A-1", 1, all, map[string][]decode.TopicPartitions{"A-1": all})
				return s
			}(),
			group: "racks",
			want:  map[string]string{"1/A-1": ""},
		},
		{
			name: "KIP-848, RackID in the joining heartbeat",
			script: func() *script {
				s := kip848Script()
				for i := range s.evs {
					if h := s.evs[i].ConsumerGroupHeartbeat; h != nil && h.MemberID == "M1" && h.MemberEpoch == 0 {
						h.RackID = ptr("rack-1")
					}
				}
				return s
			}(),
			group: "kip848",
			want:  map[string]string{"M1": "rack-1", "M2": "", "1/M1": "rack-1", "2/M1": "rack-1", "2/M2": ""},
			text:  []string{"M1 [joined] (client consumer-A 127.0.0.1:50001) epoch 1, subscribed [orders] rack rack-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, r, _ := run(t, Config{}, tt.script.events(), 5)

			// The report.
			for key, want := range tt.want {
				gen, id, classicMember := strings.Cut(key, "/")
				if !classicMember {
					id = gen
				}
				var got string
				found := false
				for _, g := range r.Groups {
					for _, gr := range g.Generations {
						for _, m := range gr.Members {
							if classicMember && fmt.Sprint(gr.Generation) == gen && m.MemberID == id {
								got, found = m.Rack, true
							}
						}
					}
					for _, cm := range g.ConsumerMembers {
						if !classicMember && cm.MemberID == id {
							got, found = cm.Rack, true
						}
					}
				}
				if !found || got != want {
					t.Errorf("report %s: rack %q (found %v); want %q", key, got, found, want)
				}
			}

			// The JSON.
			racks := jsonRacks(t, r, tt.group)
			for key, want := range tt.want {
				if got, ok := racks[key]; !ok || got != want {
					t.Errorf("JSON %s: rack %q (present %v); want %q", key, got, ok, want)
				}
			}

			// The text report: the member lines.
			var b bytes.Buffer
			if err := WriteText(&b, r, nil); err != nil {
				t.Fatal(err)
			}
			text := b.String()
			for _, sub := range tt.text {
				if !strings.Contains(text, sub) {
					t.Errorf("text report lacks %q:\n%s", sub, text)
				}
			}
			if len(tt.text) > 0 {
				// Each rack is on its own member's line.
				for _, line := range strings.Split(text, "\n") {
					for key, rack := range tt.want {
						id := key[strings.Index(key, "/")+1:]
						if rack != "" && strings.Contains(line, " rack "+rack) && !strings.Contains(line, id+" [") {
							t.Errorf("rack %s on a line that is not %s's: %q", rack, id, line)
						}
					}
				}
			}
			if len(tt.text) == 0 && strings.Contains(text, " rack ") {
				t.Errorf("text report shows a rack though none was sent:\n%s", text)
			}
		})
	}
}

// revokingChain is a cooperative-sticky group whose assignment never
// settles: A owns round_topic 0,1,2 in gen 1; B joins in gen 2, where A
// revokes 2; from then on every generation revokes a partition from one
// member (A loses 1 in odd generations, B loses 2 in even ones), and the
// member that revoked rejoins at once, making the next generation a
// follow-up. It stops after generation last.
func revokingChain(last int32) *script {
	s := newScript("chain")
	coop := func(j decode.JoinGroup, owned []decode.TopicPartitions) decode.JoinGroup {
		j.ProtocolName = "cooperative-sticky"
		sub := consumerSub("round_topic")
		sub.OwnedPartitions = owned
		j.Protocols = []decode.JoinProtocol{{Name: "cooperative-sticky", Subscription: sub}}
		for i := range j.Members {
			j.Members[i].Subscription = consumerSub("round_topic")
		}
		return j
	}
	// plan is generation gen's assignment.
	plan := func(gen int32) map[string][]decode.TopicPartitions {
		switch {
		case gen == 1:
			return map[string][]decode.TopicPartitions{"A-1": tp("round_topic", 0, 1, 2)}
		case gen%2 == 0:
			return map[string][]decode.TopicPartitions{"A-1": tp("round_topic", 0, 1), "B-1": nil}
		default:
			return map[string][]decode.TopicPartitions{"A-1": tp("round_topic", 0), "B-1": tp("round_topic", 2)}
		}
	}
	sync := func(gen int32, at float64) {
		p := plan(gen)
		s.sync(cA, at, at+0.01, "A-1", gen, p["A-1"], p)
		if gen > 1 {
			s.sync(cB, at, at+0.02, "B-1", gen, p["B-1"], nil)
		}
	}
	s.join(cA, 0, 0.01, coop(jg("A-1", 1, "A-1", "A-1"), nil))
	sync(1, 0.011)
	// Gen 2: B joins; A keeps 0,1 and revokes 2.
	s.memberIDRequired(cB, 10, 10.001, "B-1")
	s.hb(cA, 10.5, 10.501, "A-1", 1, errRebalanceInProgress)
	s.join(cA, 10.6, 10.7, coop(jg("A-1", 2, "A-1", "A-1", "B-1"), plan(1)["A-1"]))
	s.join(cB, 10.002, 10.7, coop(jg("B-1", 2, "A-1"), nil))
	sync(2, 10.71)
	for gen := int32(3); gen <= last; gen++ {
		at := 10 + float64(gen)
		prev := plan(gen - 1)
		a := coop(jg("A-1", gen, "A-1", "A-1", "B-1"), prev["A-1"])
		b := coop(jg("B-1", gen, "A-1"), prev["B-1"])
		// The member that revoked in gen-1 rejoins first.
		if gen-1 == 2 || (gen-1)%2 == 1 {
			s.join(cA, at, at+0.2, a)
			s.join(cB, at+0.1, at+0.2, b)
		} else {
			s.join(cB, at, at+0.2, b)
			s.join(cA, at+0.1, at+0.2, a)
		}
		sync(gen, at+0.21)
	}
	return s
}

// TestCooperativeChainTooLong checks the "chain does not settle" path
// (cooperative.go, Config.MaxFollowUps): follow-up generations are linked
// and numbered, and the first one past MaxFollowUps is flagged in the
// report, the text report and an unsettled entry, while shorter chains are
// not.
func TestCooperativeChainTooLong(t *testing.T) {
	tests := []struct {
		name         string
		maxFollowUps int // 0: the default, 3
		last         int32
		flagged      int32 // generation flagged, 0 for none
	}{
		{name: "default limit, chain of 3 is normal", last: 5},
		{name: "default limit, chain of 4 is flagged", last: 6, flagged: 6},
		{name: "limit 1, chain of 1 is normal", maxFollowUps: 1, last: 3},
		{name: "limit 1, chain of 2 is flagged", maxFollowUps: 1, last: 4, flagged: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit := tt.maxFollowUps
			if limit == 0 {
				limit = 3
			}
			// Not closed: at the end of input the last generation's own
			// revocation would be flagged as never followed up instead.
			entries, r, _ := run(t, Config{MaxFollowUps: tt.maxFollowUps}, revokingChain(tt.last).events(), -1)
			for gen := int32(3); gen <= tt.last; gen++ {
				g := genOf(t, r, "chain", gen)
				chain := int(gen - 2)
				if g.Mode != ModeCooperative || g.Trigger.Kind != TriggerFollowUp || g.FollowUpOf == nil || *g.FollowUpOf != gen-1 || g.FollowUpChain != chain {
					t.Fatalf("gen %d: mode %s trigger %s followUpOf %v chain %d; want cooperative follow-up of %d, chain %d",
						gen, g.Mode, g.Trigger.Kind, g.FollowUpOf, g.FollowUpChain, gen-1, chain)
				}
				want := ""
				if gen == tt.flagged {
					want = fmt.Sprintf("gen %d is cooperative follow-up number %d in a row (more than %d): the assignment is not settling", gen, chain, limit)
				}
				if g.Unsettled != want {
					t.Errorf("gen %d unsettled %q; want %q", gen, g.Unsettled, want)
				}
			}
			var unsettled []Entry
			for _, e := range entries {
				if e.Kind == KindUnsettled {
					unsettled = append(unsettled, e)
				}
			}
			var b bytes.Buffer
			if err := WriteText(&b, r, nil); err != nil {
				t.Fatal(err)
			}
			if tt.flagged == 0 {
				if len(unsettled) != 0 || strings.Contains(b.String(), "unsettled") {
					t.Errorf("unsettled entries %v, text report:\n%s\nwant nothing unsettled", unsettled, b.String())
				}
				return
			}
			if len(unsettled) != 1 || unsettled[0].Generation != tt.flagged || !strings.Contains(unsettled[0].Text, "not settling") ||
				fmt.Sprint(unsettled[0].Fields["chain"]) != fmt.Sprint(tt.flagged-2) {
				t.Errorf("unsettled entries %+v; want one for gen %d, chain %d, saying it is not settling", unsettled, tt.flagged, tt.flagged-2)
			}
			if want := fmt.Sprintf("unsettled: gen %d is cooperative follow-up number %d", tt.flagged, tt.flagged-2); !strings.Contains(b.String(), want) {
				t.Errorf("text report lacks %q:\n%s", want, b.String())
			}
		})
	}
}
