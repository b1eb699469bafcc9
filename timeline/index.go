package timeline

// The timeline's caches: what is computed again from a generation's
// members whenever asked would cost a sort or a walk of every partition
// per question, so it is kept until the members change. Each cache below
// is made at its first ask and dropped here, in one place, when what it
// was made from changes. The two owner caches are speed shortcuts kept
// because in-repo benchmarks on realistic traffic show they pay
// (docs/benchmarks.md, "Timeline shortcuts").

// memberIndex is what a generation caches of its members: their ids
// sorted, for the many loops over them, and the owner of each partition
// (ownerOf). ver counts the changes to the members and their
// assignments, for the caches of what one member owned (ownedCache).
type memberIndex struct {
	ids    []string        // nil: made again at the next ask
	owners partitionOwners // nil: made again
	ver    uint64
}

// membersChanged drops the index: a member was added or removed.
func (x *memberIndex) membersChanged() {
	x.ids = nil
	x.assignmentsChanged()
}

// assignmentsChanged drops who owns what: a member's assignment or plan
// was set, or a member was replaced.
func (x *memberIndex) assignmentsChanged() {
	x.owners = nil
	x.ver++
}

// shrink drops the partition owners, which cost a map of every partition,
// of a generation that is seldom asked (Retain: all but a group's latest
// two); they are made again if asked.
func (x *memberIndex) shrink() { x.owners = nil }

// ownedCache is what a member owned in the generation it was last asked
// for, cached in the member's registry entry (group.memberOwned): most
// commits name the same generation as the last. It holds as long as that
// generation's index version (memberIndex.ver) is the one it was made at.
type ownedCache struct {
	serial, ver uint64     // the generation (generation.serial) and its index version
	owned       partitions // nil: unknown
}

// get is the cached set for gen, and whether the cache holds it.
func (c *ownedCache) get(gen *generation) (partitions, bool) {
	if c.serial == gen.serial && c.ver == gen.index.ver {
		return c.owned, true
	}
	return nil, false
}

// set caches owned, what the member owned in gen.
func (c *ownedCache) set(gen *generation, owned partitions) {
	c.serial, c.ver, c.owned = gen.serial, gen.index.ver, owned
}
