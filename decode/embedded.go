package decode

// The group APIs carry opaque bytes whose layout the protocol type names:
// JoinGroup protocol metadata and SyncGroup assignments. These two
// functions are the one place that chooses a layout by protocol type; any
// other type (Kafka Streams uses "consumer" too, but e.g. a schema
// registry's "sr" does not) keeps its raw bytes only.

// Protocol types whose embedded bytes are decoded.
const (
	ProtocolConsumer = "consumer"
	ProtocolConnect  = "connect"
)

// memberMetadata decodes one member's JoinGroup protocol metadata for the
// given assignor (protocol name). Both results are nil when the type is not
// decoded or the bytes do not decode.
func memberMetadata(protocolType, assignor string, b []byte) (*Subscription, *ConnectMetadata) {
	switch protocolType {
	case ProtocolConsumer:
		return decodeSubscription(assignor, b), nil
	case ProtocolConnect:
		return nil, decodeConnectMetadata(b)
	}
	return nil, nil
}

// memberAssignment decodes one member's SyncGroup assignment made by the
// given assignor ("" unknown).
func memberAssignment(protocolType, assignor string, b []byte) (*Assignment, *ConnectAssignment) {
	switch protocolType {
	case ProtocolConsumer:
		return decodeAssignment(assignor, b), nil
	case ProtocolConnect:
		return nil, decodeConnectAssignment(b)
	}
	return nil, nil
}
