package timeline

import "fmt"

// assignorModes says which assignors rebalance eagerly (every member
// revokes everything before rejoining) and which cooperatively (members
// keep their partitions and revoke only what moves, KIP-429). An assignor
// not listed is cooperative when its members report owned partitions.
var assignorModes = map[string]string{
	"range":              ModeEager, // Java RangeAssignor, franz-go, librdkafka
	"roundrobin":         ModeEager,
	"sticky":             ModeEager,       // KIP-54 StickyAssignor: sticky but eager
	"cooperative-sticky": ModeCooperative, // KIP-429
	"stream":             ModeCooperative, // Kafka Streams since 2.4
	"RoundRobinAssigner": ModeEager,       // kafkajs
	"default":            ModeEager,       // Connect, eager
	"compatible":         ModeCooperative, // Connect, KIP-415 incremental cooperative
	"sessioned":          ModeCooperative, // Connect, KIP-507
}

func modeOf(gen *generation) string {
	if m, ok := assignorModes[gen.protocol]; ok {
		return m
	}
	for _, m := range gen.members {
		if m.owned.count() > 0 {
			return ModeCooperative
		}
	}
	return ModeUnknown
}

// linkFollowUp links a cooperative follow-up to the generation whose
// revocations caused it, and flags a chain that keeps going.
func (g *group) linkFollowUp(gen *generation) {
	if gen.trigger.kind != TriggerFollowUp || gen.prev == nil {
		return
	}
	gen.followUpOf = gen.prev.num
	gen.chain = gen.prev.chain + 1
	if int(gen.chain) > g.e.cfg.MaxFollowUps {
		gen.unsettled = fmt.Sprintf("gen %d is cooperative follow-up number %d in a row (more than %d): the assignment is not settling",
			gen.num, gen.chain, g.e.cfg.MaxFollowUps)
	}
}

// revokedAny reports whether any member of gen lost partitions.
func revokedAny(gen *generation) bool {
	for _, m := range gen.members {
		if m.revoked().count() > 0 {
			return true
		}
	}
	return false
}
