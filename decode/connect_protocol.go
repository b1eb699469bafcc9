package decode

// The Kafka Connect protocol (protocol type "connect") embedded in
// JoinGroup and SyncGroup, decoded with kmsg:
//
//   ConnectMemberMetadata: int16 version, URL, ConfigOffset; v1+ (KIP-415,
//   incremental cooperative) the member's current assignment as bytes.
//   ConnectMemberAssignment: int16 version, Error, Leader, LeaderURL,
//   ConfigOffset, Assignment[{Connector, Tasks}]; v1+ Revoked in the same
//   form and ScheduledDelay. Task -1 stands for the connector instance
//   itself (ConnectProtocol.CONNECTOR_TASK).
//
// kmsg v1.15.1 reads Tasks as int16 where Apache Kafka writes int32
// (ConnectProtocol.CONNECTOR_ASSIGNMENT_V0: ArrayOf(INT32)). So that such a
// misreading is never shown as fact, an assignment is kept only when kmsg
// re-encodes it to exactly the bytes it read; otherwise only the raw bytes
// stay.

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// connectorTask is the task id that stands for the connector itself.
const connectorTask = -1

// decodeConnectMetadata decodes connect protocol metadata, or returns nil.
func decodeConnectMetadata(b []byte) *ConnectMetadata {
	var m kmsg.ConnectMemberMetadata
	if err := m.ReadFrom(b); err != nil {
		return nil
	}
	return &ConnectMetadata{Version: m.Version, URL: m.URL, ConfigOffset: m.ConfigOffset}
}

// decodeConnectAssignment decodes a connect protocol assignment, or
// returns nil when it does not decode or does not re-encode to b.
func decodeConnectAssignment(b []byte) *ConnectAssignment {
	var m kmsg.ConnectMemberAssignment
	if err := m.ReadFrom(b); err != nil {
		return nil
	}
	if !bytes.Equal(m.AppendTo(nil), b) {
		return nil
	}
	a := &ConnectAssignment{
		Version:        m.Version,
		Error:          m.Error,
		Leader:         m.Leader,
		LeaderURL:      m.LeaderURL,
		ConfigOffset:   m.ConfigOffset,
		ScheduledDelay: millis(m.ScheduledDelay),
	}
	slices.SortFunc(m.Assignment, func(x, y kmsg.ConnectMemberAssignmentAssignment) int {
		return strings.Compare(x.Connector, y.Connector)
	})
	for _, c := range m.Assignment {
		a.Connectors, a.Tasks = connectorTasks(a.Connectors, a.Tasks, c.Connector, c.Tasks)
	}
	slices.SortFunc(m.Revoked, func(x, y kmsg.ConnectMemberAssignmentRevoked) int {
		return strings.Compare(x.Connector, y.Connector)
	})
	for _, c := range m.Revoked {
		a.RevokedConnectors, a.RevokedTasks = connectorTasks(a.RevokedConnectors, a.RevokedTasks, c.Connector, c.Tasks)
	}
	return a
}

// connectorTasks appends one connector's entry: the connector itself when
// its task list holds -1, and "connector-N" for each task N, in task order.
func connectorTasks(connectors, tasks []string, connector string, ids []int16) ([]string, []string) {
	slices.Sort(ids)
	for _, id := range ids {
		if id == connectorTask {
			connectors = append(connectors, connector)
		} else {
			tasks = append(tasks, fmt.Sprintf("%s-%d", connector, id))
		}
	}
	return connectors, tasks
}
