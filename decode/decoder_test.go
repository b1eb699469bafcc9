package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// decodeOne decodes an exchange with a fresh Decoder and fails on error.
func decodeOne(t *testing.T, x *Exchange) []Event {
	t.Helper()
	evs, err := NewDecoder().Decode(x)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return evs
}

func at(req kmsg.Request, v int16) kmsg.Request {
	req.SetVersion(v)
	return req
}

func TestDecodeBatched(t *testing.T) {
	tests := []struct {
		name       string
		req        kmsg.Request
		resp       kmsg.Response
		wantGroups []string
		wantErrors []int16
	}{
		{"find_coordinator_v3_single", at(first(findCoordinator(3)), 3), second(findCoordinator(3)), []string{group}, []int16{0}},
		{"find_coordinator_v4_batched", at(first(findCoordinator(4)), 4), second(findCoordinator(4)), []string{group, "test_group_2"}, []int16{0, 15}},
		{"offset_fetch_v7_single", at(first(offsetFetch(7)), 7), second(offsetFetch(7)), []string{group}, []int16{0}},
		{"offset_fetch_v8_batched", at(first(offsetFetch(8)), 8), second(offsetFetch(8)), []string{group, "test_group_2"}, []int16{0, 14}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := decodeOne(t, exchange(tt.req, tt.resp))
			if len(evs) != len(tt.wantGroups) {
				t.Fatalf("got %d events; want %d", len(evs), len(tt.wantGroups))
			}
			for i, e := range evs {
				code := int16(-100)
				switch {
				case e.FindCoordinator != nil:
					code = e.FindCoordinator.ErrorCode
				case e.OffsetFetch != nil:
					code = e.OffsetFetch.ErrorCode
				}
				if e.Group != tt.wantGroups[i] || code != tt.wantErrors[i] {
					t.Errorf("event %d: got group %q error %d; want %q %d", i, e.Group, code, tt.wantGroups[i], tt.wantErrors[i])
				}
			}
		})
	}
}

func first(req kmsg.Request, _ kmsg.Response) kmsg.Request    { return req }
func second(_ kmsg.Request, resp kmsg.Response) kmsg.Response { return resp }

func TestDecodeWithoutResponse(t *testing.T) {
	req, _ := heartbeat(0)
	evs := decodeOne(t, exchange(at(req, 4), nil))
	if len(evs) != 1 {
		t.Fatalf("got %d events; want 1", len(evs))
	}
	e := evs[0]
	if e.Responded() || e.Latency() != 0 || e.Heartbeat == nil || e.Heartbeat.MemberID != memberB {
		t.Errorf("got responded %v latency %v heartbeat %+v; want the request side only", e.Responded(), e.Latency(), e.Heartbeat)
	}
	req2, resp := heartbeat(0)
	e = decodeOne(t, exchange(at(req2, 4), resp))[0]
	if !e.Responded() || e.Latency() != testRespAt.Sub(testAt) || e.Heartbeat.ErrorCode != 27 {
		t.Errorf("got responded %v latency %v error %d; want true, 3ms, 27", e.Responded(), e.Latency(), e.Heartbeat.ErrorCode)
	}
}

func TestDecodeEmbedded(t *testing.T) {
	t.Run("sticky_user_data", func(t *testing.T) {
		req, resp := joinGroupLeaderCooperative(9)
		j := decodeOne(t, exchange(at(req, 9), resp))[0].JoinGroup
		a := j.Members[0].Subscription.Sticky
		if a == nil || a.Generation != 4 || len(a.CurrentAssignment) != 1 || a.CurrentAssignment[0].Topic != "round_topic" {
			t.Errorf("franz-go sticky user data: got %+v", a)
		}
		b := j.Members[1].Subscription.Sticky
		if b == nil || b.Generation != 4 || b.CurrentAssignment != nil {
			t.Errorf("Java cooperative-sticky user data: got %+v; want generation 4 only", b)
		}
		if c := j.Members[2].Subscription; c == nil || c.Sticky != nil || !bytes.Equal(c.UserData, []byte{0xde, 0xad}) {
			t.Errorf("undecodable user data: got %+v; want raw user data, no sticky", c)
		}
	})
	t.Run("unknown_protocol_type_keeps_bytes", func(t *testing.T) {
		req, resp := joinGroupUnknownType(5)
		jr := req.(*kmsg.JoinGroupRequest)
		j := decodeOne(t, exchange(at(req, 5), resp))[0].JoinGroup
		for i, p := range j.Protocols {
			if p.Subscription != nil || p.Connect != nil || !bytes.Equal(p.Metadata, jr.Protocols[i].Metadata) {
				t.Errorf("protocol %s: got %+v; want raw bytes only", p.Name, p)
			}
		}
	})
	t.Run("consumer_garbage_keeps_bytes", func(t *testing.T) {
		req := joinRequest("consumer")
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
		j := decodeOne(t, exchange(at(req, 6), nil))[0].JoinGroup
		if p := j.Protocols[0]; p.Subscription != nil || !bytes.Equal(p.Metadata, []byte{0}) {
			t.Errorf("got %+v; want no subscription, raw bytes kept", p)
		}
	})
	t.Run("connect_java_int32_tasks_stay_raw", func(t *testing.T) {
		// Apache Kafka's ConnectProtocol writes task ids as int32, which
		// kmsg reads as int16: such an assignment must not be presented.
		b := []byte{0, 0, 0, 0} // version 0, error 0
		b = append(b, 0, 1, 'l', 0, 1, 'u', 0, 0, 0, 0, 0, 0, 0, 5)
		b = append(b, 0, 0, 0, 1, 0, 1, 'c', 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0)
		if a := decodeConnectAssignment(b); a != nil {
			t.Errorf("got %+v; want nil", a)
		}
	})
	t.Run("sync_group_remembers_protocol_type", func(t *testing.T) {
		d := NewDecoder()
		req, resp := syncGroupLeader(0)
		x := exchange(at(req, 0), resp)
		evs, err := d.Decode(x)
		if err != nil || evs[0].SyncGroup.Assignment != nil || evs[0].SyncGroup.RawAssignment == nil {
			t.Fatalf("before any JoinGroup: got %+v, %v; want raw assignment only", evs, err)
		}
		if _, err := d.Decode(joinedAs("consumer")(0)); err != nil {
			t.Fatal(err)
		}
		evs, err = d.Decode(x)
		if err != nil || evs[0].SyncGroup.ProtocolType != "consumer" || evs[0].SyncGroup.Assignment == nil {
			t.Fatalf("after JoinGroup: got %+v, %v; want a decoded assignment", evs, err)
		}
	})
}

func TestDecoderMemoryBounded(t *testing.T) {
	d := NewDecoder()
	d.max = 2
	for _, g := range []string{"g1", "g2", "g3", "g2"} {
		req := joinRequest("consumer")
		req.Group = g
		if _, err := d.Decode(exchange(at(req, 5), nil)); err != nil {
			t.Fatal(err)
		}
	}
	if len(d.types) != 2 || len(d.order) != 2 {
		t.Fatalf("got %d groups remembered; want 2", len(d.types))
	}
	for g, want := range map[string]string{"g1": "", "g2": "consumer", "g3": "consumer"} {
		if got := d.protocolType(g); got != want {
			t.Errorf("protocolType(%s): got %q; want %q", g, got, want)
		}
	}
}

func TestDecodeNoAlias(t *testing.T) {
	req, resp := joinGroupLeaderRange(9)
	x := exchange(at(req, 9), resp)
	evs := decodeOne(t, x)
	before, _ := json.Marshal(evs)
	for i := range x.Request {
		x.Request[i] = 0xaa
	}
	for i := range x.Response {
		x.Response[i] = 0xaa
	}
	after, _ := json.Marshal(evs)
	if !bytes.Equal(before, after) {
		t.Error("events changed when the exchange's bytes were overwritten")
	}
}

func TestObserved(t *testing.T) {
	tests := []struct {
		key           int16
		observed, grp bool
		name          string
	}{
		{0, false, false, "Produce"},
		{3, true, false, "Metadata"},
		{8, true, true, "OffsetCommit"},
		{9, true, true, "OffsetFetch"},
		{10, true, true, "FindCoordinator"},
		{11, true, true, "JoinGroup"},
		{12, true, true, "Heartbeat"},
		{13, true, true, "LeaveGroup"},
		{14, true, true, "SyncGroup"},
		{17, false, false, "SASLHandshake"},
		{18, true, false, "ApiVersions"},
		{36, false, false, "SASLAuthenticate"},
		{68, true, true, "ConsumerGroupHeartbeat"},
		{69, false, false, "ConsumerGroupDescribe"},
		{76, true, true, "ShareGroupHeartbeat"},
		{78, true, false, "ShareFetch"},
		{79, true, false, "ShareAcknowledge"},
		{88, true, true, "StreamsGroupHeartbeat"},
		{89, true, true, "StreamsGroupDescribe"},
		{999, false, false, "Unknown(999)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Observed(tt.key); got != tt.observed {
				t.Errorf("Observed(%d): got %v; want %v", tt.key, got, tt.observed)
			}
			if got := GroupAPI(tt.key); got != tt.grp {
				t.Errorf("GroupAPI(%d): got %v; want %v", tt.key, got, tt.grp)
			}
			if got := APIName(tt.key); got != tt.name {
				t.Errorf("APIName(%d): got %q; want %q", tt.key, got, tt.name)
			}
		})
	}
}

func TestErrorName(t *testing.T) {
	tests := []struct {
		code int16
		want string
	}{
		{0, ""},
		{-1, "UNKNOWN_SERVER_ERROR"},
		{15, "COORDINATOR_NOT_AVAILABLE"},
		{22, "ILLEGAL_GENERATION"},
		{25, "UNKNOWN_MEMBER_ID"},
		{27, "REBALANCE_IN_PROGRESS"},
		{79, "MEMBER_ID_REQUIRED"},
		{82, "FENCED_INSTANCE_ID"},
		{110, "FENCED_MEMBER_EPOCH"},
		{32000, "UNKNOWN_ERROR_CODE_32000"},
	}
	for _, tt := range tests {
		if got := ErrorName(tt.code); got != tt.want {
			t.Errorf("ErrorName(%d): got %q; want %q", tt.code, got, tt.want)
		}
	}
}

func TestTopicIDText(t *testing.T) {
	id := TopicID(topicID(0x40))
	b, err := json.Marshal(struct{ ID TopicID }{id})
	if err != nil || string(b) != `{"ID":"QEFCQ0RFRkdISUpLTE1OTw"}` {
		t.Fatalf("marshal: got %s, %v", b, err)
	}
	var back struct{ ID TopicID }
	if err := json.Unmarshal(b, &back); err != nil || back.ID != id {
		t.Fatalf("unmarshal: got %v, %v; want %v", back.ID, err, id)
	}
	for _, bad := range []string{"", "QEFC", "QEFCQ0RFRkdISUpLTE1OTw==", "!!FCQ0RFRkdISUpLTE1OTw"} {
		var x TopicID
		if err := x.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("UnmarshalText(%q): got no error", bad)
		}
	}
	if !(TopicID{}).IsZero() || id.IsZero() {
		t.Error("IsZero: wrong answer")
	}
}

// errIs reports whether err wraps target, for table tests.
func errIs(err, target error) bool { return errors.Is(err, target) }
