package decode

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiDecoder turns one decoded request and its response (nil when none was
// seen) into events, appended to dst. base carries the exchange's facts;
// each decoder fills Group and its API-specific pointer.
type apiDecoder func(d *Decoder, dst []Event, base Event, req kmsg.Request, resp kmsg.Response) []Event

// directDecoder decodes one exchange whose header checked out into kmsg
// structs of its own: h is the request header and reqBody the request
// body; respBody and respErr are what responseBody gave (both nil when
// there was no response).
type directDecoder func(dst []Event, base Event, h RequestHeader, reqBody, respBody []byte, respErr error) ([]Event, error)

// api is one entry of the observation policy.
type api struct {
	// group marks the consumer-group APIs (one log line per exchange).
	group bool
	// requestOnly marks the APIs whose request alone is handed to the
	// pipeline, as soon as it is read; the response is streamed and
	// never kept.
	requestOnly bool
	// decode and direct are nil for APIs observed but not turned into
	// events. direct, when set, decodes instead: for Heartbeat, the most
	// frequent exchange, whose kmsg structs have no slices and so stay on
	// the stack, with no reused pair to reset.
	decode apiDecoder
	direct directDecoder
}

// decodes reports whether a's exchanges are turned into events.
func (a api) decodes() bool { return a.decode != nil || a.direct != nil }

// apis is the one list of APIs whose exchanges the proxy hands to the
// pipeline, each with why. An API absent here is forwarded and neither
// observed nor decoded; that is deliberate for SaslHandshake and
// SaslAuthenticate, whose payloads carry credentials and must never reach a
// log or a journal.
var apis = map[kmsg.Key]api{
	kmsg.Fetch:                  {requestOnly: true},                              // requests only: consumers' positions, for the diagnosis (fetch.go)
	kmsg.Metadata:               {decode: decodeMetadata},                         // topic ids to names for KIP-848 assignments
	kmsg.OffsetCommit:           {group: true, decode: decodeOffsetCommit},        // commits, and which fail during a rebalance
	kmsg.OffsetFetch:            {group: true, decode: decodeOffsetFetch},         // where a new owner resumes
	kmsg.FindCoordinator:        {group: true, decode: decodeFindCoordinator},     // which broker coordinates a group
	kmsg.JoinGroup:              {group: true, decode: decodeJoinGroup},           // the join phase, subscriptions, leader
	kmsg.Heartbeat:              {group: true, direct: readHeartbeat},             // liveness, REBALANCE_IN_PROGRESS
	kmsg.LeaveGroup:             {group: true, decode: decodeLeaveGroup},          // departures and their reasons
	kmsg.SyncGroup:              {group: true, decode: decodeSyncGroup},           // the plan and each member's assignment
	kmsg.ApiVersions:            {},                                               // what versions clients will speak
	kmsg.ConsumerGroupHeartbeat: {group: true, decode: decodeConsumerGroupHBeat},  // KIP-848 membership and assignment
	kmsg.TxnOffsetCommit:        {group: true, decode: decodeTxnOffsetCommit},     // exactly-once commits, pending until EndTxn
	kmsg.EndTxn:                 {decode: decodeEndTxn},                           // the fate of those commits: committed or aborted
	kmsg.ShareGroupHeartbeat:    {group: true, decode: decodeShareGroupHeartbeat}, // KIP-932 share group membership and assignment
	// ShareFetch responses reach the pipeline with their records elided
	// (proxy/walk.go): the acquired ranges around them are kept.
	kmsg.ShareFetch:       {decode: decodeShareFetch},       // records acquired and acknowledged, per member
	kmsg.ShareAcknowledge: {decode: decodeShareAcknowledge}, // records acknowledged without a fetch
	// KIP-1071 streams groups: membership, epochs and tasks; the
	// describe is the only view of the target assignment.
	kmsg.StreamsGroupHeartbeat: {group: true, decode: decodeStreamsGroupHeartbeat}, // members, epochs, active/standby/warm-up tasks, status
	kmsg.StreamsGroupDescribe:  {group: true, decode: decodeStreamsGroupDescribe},  // group and assignment epochs, topology, target tasks
}

// apiTable is apis indexed by key, for lookups on every exchange (an
// array index instead of a map lookup); observed marks the keys apis has.
var apiTable = func() []struct {
	api
	observed bool
} {
	var n int16
	for k := range apis {
		n = max(n, int16(k)+1)
	}
	t := make([]struct {
		api
		observed bool
	}, n)
	for k, a := range apis {
		t[k].api, t[k].observed = a, true
	}
	return t
}()

// lookupAPI is apis[key] and whether apis has it.
func lookupAPI(key int16) (api, bool) {
	if key < 0 || int(key) >= len(apiTable) {
		return api{}, false
	}
	return apiTable[key].api, apiTable[key].observed
}

// Observed reports whether the proxy hands exchanges of this API to the
// pipeline: the group APIs, Metadata, ApiVersions, EndTxn and the requests of Fetch
// (see RequestOnly). It is false for SASL APIs.
func Observed(apiKey int16) bool {
	_, ok := lookupAPI(apiKey)
	return ok
}

// RequestOnly reports whether only the requests of this API are handed to
// the pipeline (Fetch: the response, the largest frame on the wire, is
// streamed and never kept). Such exchanges have no response and no
// response time.
func RequestOnly(apiKey int16) bool {
	a, _ := lookupAPI(apiKey)
	return a.requestOnly
}

// GroupAPI reports whether this API is one of the consumer-group APIs
// (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// OffsetCommit, OffsetFetch, ConsumerGroupHeartbeat, TxnOffsetCommit).
func GroupAPI(apiKey int16) bool {
	a, _ := lookupAPI(apiKey)
	return a.group
}

// APIName is the API's name as kmsg spells it ("JoinGroup"), or
// "Unknown(<key>)" for a key kmsg does not know.
func APIName(apiKey int16) string {
	if n := kmsg.NameForKey(apiKey); n != "Unknown" {
		return n
	}
	return fmt.Sprintf("Unknown(%d)", apiKey)
}

// maxRememberedGroups bounds the Decoder's memory of protocol types.
const maxRememberedGroups = 10000

// Decoder turns exchanges into typed group events. What it remembers
// between exchanges changes no event's meaning, only its cost: each
// group's protocol type ("consumer", "connect", ...) as last seen in a
// JoinGroup, needed to decode SyncGroup assignments before v5, which do not
// carry it (at most 10,000 groups; the group first remembered is forgotten
// when full); the Metadata decoded from recent response bodies, which
// clients repeat byte for byte (bounded in bytes); and the kmsg structs of
// the busiest APIs, decoded into again. So output depends only on the
// exchanges fed in and their order. A Decoder has one owner (the pipeline) and is not
// safe for concurrent use; feed exchanges in the order they happened for
// deterministic results. The zero value is not usable: use NewDecoder.
type Decoder struct {
	// types maps a group to its protocol type.
	types map[string]string
	// order holds the remembered groups in the order first seen; next is
	// the slot to evict once order is full.
	order []string
	next  int
	max   int

	// metadata remembers the Metadata decoded from recent response bodies.
	metadata metadataMemo

	// reuse holds the kmsg structs of the busiest APIs, decoded into again
	// and again (see getPair).
	reuse reusedPairs
}

// NewDecoder returns a Decoder with an empty memory.
func NewDecoder() *Decoder {
	return &Decoder{types: make(map[string]string), max: maxRememberedGroups}
}

// Decode decodes one exchange. It returns (nil, nil) for APIs it does not
// decode (ApiVersions, Produce, ...). For the group APIs and Metadata it
// returns one Event, or one per group or key for batched FindCoordinator
// v4+ and OffsetFetch v8+ (none when the batch is empty). A nil Response
// still yields the request-side event with RespondedAt zero.
//
// It fails, returning no events, when a frame does not decode, when the
// request version is above what kmsg knows (ErrUnsupportedVersion), or when
// the frames disagree with the Exchange (ErrMismatch). Embedded protocol
// bytes that do not decode are not an error: they stay raw. Events never
// alias the Exchange's byte slices.
func (d *Decoder) Decode(x *Exchange) (events []Event, err error) {
	return d.DecodeAppend(nil, x)
}

// DecodeAppend is Decode appending the events to dst and returning the
// extended slice, so that a caller who is done with the events of one
// exchange can reuse their slice for the next (dst[:0]): replay decodes
// millions of exchanges. On failure it returns dst unchanged. The events
// appended never alias dst's earlier elements, the Exchange's byte slices
// or the decoder's reused structures, except that a Metadata event's
// *Metadata may be shared with other events and is read-only (see
// Metadata).
func (d *Decoder) DecodeAppend(dst []Event, x *Exchange) (events []Event, err error) {
	if x == nil {
		return dst, fmt.Errorf("decode: nil exchange")
	}
	if x.Oversized {
		// A frame is missing: there is nothing to tell but that it
		// happened.
		return append(dst, Event{At: x.RequestAt, RespondedAt: x.ResponseAt, ConnID: x.ConnID, ClientAddr: x.ClientAddr,
			ClientID: x.ClientID, BrokerID: x.BrokerID, APIKey: x.APIKey, APIVersion: x.APIVersion,
			CorrelationID: x.CorrelationID, Unobserved: &Unobserved{RequestSeen: x.Request != nil}}), nil
	}
	defer func() {
		if r := recover(); r != nil {
			events = dst
			err = fmt.Errorf("%w: %s v%d: %v", ErrPanic, APIName(x.APIKey), x.APIVersion, r)
		}
	}()
	events, err = d.decode(dst, x)
	if err != nil {
		return dst, err
	}
	return events, nil
}

func (d *Decoder) decode(dst []Event, x *Exchange) ([]Event, error) {
	if len(x.Request) < 2 {
		if a, _ := lookupAPI(x.APIKey); !a.decodes() {
			return dst, nil
		}
		return nil, fmt.Errorf("decode: %s request: %w", APIName(x.APIKey), ErrShortFrame)
	}
	key := int16(binary.BigEndian.Uint16(x.Request))
	a, _ := lookupAPI(key)
	if !a.decodes() {
		return dst, nil
	}
	h, hdrClientID, err := parseRequestHeader(x.Request)
	if err != nil {
		return nil, fmt.Errorf("decode: %s request header: %w", APIName(key), err)
	}
	if h.APIKey != x.APIKey || h.APIVersion != x.APIVersion {
		return nil, fmt.Errorf("%w: exchange says %s v%d, request header %s v%d",
			ErrMismatch, APIName(x.APIKey), x.APIVersion, APIName(key), h.APIVersion)
	}
	// The event's common part, whole before anything else is known: its
	// copies (into the decoder's argument, then dst) load it long after
	// it was stored. Loads right after stores to the same bytes would
	// wait for them (a store-to-load forwarding stall).
	var respondedAt time.Time
	if x.Response != nil {
		respondedAt = x.ResponseAt
	}
	base := Event{
		At:            x.RequestAt,
		RespondedAt:   respondedAt,
		ConnID:        x.ConnID,
		ClientAddr:    x.ClientAddr,
		ClientID:      clientID(x, hdrClientID),
		BrokerID:      x.BrokerID,
		APIKey:        key,
		APIVersion:    h.APIVersion,
		CorrelationID: h.CorrelationID,
	}
	reqBody := x.Request[h.Len:]
	var respBody []byte // the response body, once its header checked out
	var respErr error   // or what was wrong with its header
	if x.Response != nil {
		respBody, respErr = responseBody(key, h, x.Response)
	}
	if key == int16(kmsg.Metadata) && respBody != nil {
		// A Metadata exchange decoded before: its request decodes as it
		// did then, and its event depends on the response body alone.
		if m := d.metadata.get(h.APIVersion, reqBody, respBody); m != nil {
			dst = append(dst, base)
			dst[len(dst)-1].Metadata = m
			return dst, nil
		}
	}
	if a.direct != nil {
		return a.direct(dst, base, h, reqBody, respBody, respErr)
	}
	pair := d.getPair(key)
	req := pair.req
	if h.APIVersion < 0 || h.APIVersion > req.MaxVersion() {
		return nil, errVersion(key, h.APIVersion, req.MaxVersion())
	}
	req.SetVersion(h.APIVersion)
	if err := readFrom(req, pair.unsafeReq, reqBody); err != nil {
		return nil, errRequest(key, h.APIVersion, err)
	}
	var resp kmsg.Response
	if x.Response != nil {
		if respErr != nil {
			return nil, respErr
		}
		resp = pair.resp
		if resp == nil {
			resp = req.ResponseKind()
		}
		resp.SetVersion(h.APIVersion)
		if err := readFrom(resp, pair.unsafeResp, respBody); err != nil {
			return nil, errResponse(key, h.APIVersion, err)
		}
	}
	events := a.decode(d, dst, base, req, resp)
	if key == int16(kmsg.Metadata) && resp != nil && len(events) == len(dst)+1 {
		d.metadata.put(h.APIVersion, reqBody, respBody, events[len(dst)].Metadata)
	}
	return events, nil
}

// errVersion is the error for a request version above what kmsg knows.
func errVersion(key, version, maxVersion int16) error {
	return fmt.Errorf("decode: %s v%d (kmsg knows v0-v%d): %w", APIName(key), version, maxVersion, ErrUnsupportedVersion)
}

// errRequest and errResponse wrap kmsg's error for a body it did not read.
func errRequest(key, version int16, err error) error {
	return fmt.Errorf("decode: %s v%d request: %w", APIName(key), version, err)
}

func errResponse(key, version int16, err error) error {
	return fmt.Errorf("decode: %s v%d response: %w", APIName(key), version, err)
}

// responseBody checks the header of the response to a request with header
// h and returns the response body after it.
func responseBody(key int16, h RequestHeader, frame []byte) ([]byte, error) {
	n, err := ResponseHeaderLen(key, h.APIVersion, frame)
	if err != nil {
		return nil, fmt.Errorf("decode: %s v%d response header: %w", APIName(key), h.APIVersion, err)
	}
	if corr := int32(binary.BigEndian.Uint32(frame)); corr != h.CorrelationID {
		return nil, fmt.Errorf("%w: %s v%d response correlation id %d, request %d",
			ErrMismatch, APIName(key), h.APIVersion, corr, h.CorrelationID)
	}
	return frame[n:], nil
}

// clientID is the request header's client id: the exchange's own
// ClientID string when it says the same, as it does when the proxy or the
// journal filled it from the same header, else a copy.
func clientID(x *Exchange, header []byte) string {
	if string(header) == x.ClientID {
		return x.ClientID
	}
	return string(header)
}

// readFrom decodes b into m, its strings aliasing b when u, which is m as
// an unsafeReader, is set.
func readFrom(m interface{ ReadFrom([]byte) error }, u unsafeReader, b []byte) error {
	if u != nil {
		return u.UnsafeReadFrom(b)
	}
	return m.ReadFrom(b)
}

// rememberProtocolType notes a group's protocol type from a JoinGroup.
func (d *Decoder) rememberProtocolType(group, protocolType string) {
	if protocolType == "" {
		return
	}
	if _, ok := d.types[group]; !ok {
		if len(d.order) < d.max {
			d.order = append(d.order, group)
		} else {
			delete(d.types, d.order[d.next])
			d.order[d.next] = group
			d.next = (d.next + 1) % d.max
		}
	}
	d.types[group] = protocolType
}

// protocolType is the group's remembered protocol type, or "".
func (d *Decoder) protocolType(group string) string {
	return d.types[group]
}
