package diagnose

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kproxy-dev/kproxy/decode"
)

// instanceState is one group.instance.id: the client addresses whose
// JoinGroups took it, in order, and the member id each got.
type instanceState struct {
	addrs   []string
	members []string
}

// instanceJoined records that the JoinGroup from ev, answered with member
// id, took instance; an instance that goes back to a client address it
// was taken from (A, B, A) is held by two live processes.
func (e *Engine) instanceJoined(g *groupState, ev *decode.Event, id, instance string) {
	if instance == "" {
		return
	}
	is := g.instances[instance]
	if is == nil {
		if g.instances == nil {
			g.instances = map[string]*instanceState{}
		}
		is = &instanceState{}
		g.instances[instance] = is
	}
	if n := len(is.addrs); n > 0 && is.addrs[n-1] == ev.ClientAddr {
		is.members[n-1] = id
		return
	}
	for i, a := range is.addrs {
		if a != ev.ClientAddr || !g.once("duplicate:"+instance) {
			continue
		}
		f := newFinding(DuplicateInstanceID, g.id, Critical, ev.At, id)
		f.Members = e.infos(g, is.members[i], is.members[len(is.members)-1], id)
		f.Evidence["instanceId"] = instance
		f.Evidence["clientAddrs"] = append(append([]string{}, is.addrs[i:]...), ev.ClientAddr)
		f.Evidence["takeovers"] = len(is.addrs) - i
		f.Explanation = fmt.Sprintf("group.instance.id %q is used by two live processes: the connection from %s took it back after %s had replaced it. Each join fences the other process (FENCED_INSTANCE_ID), which then rejoins and fences the first: they take turns, and the partitions of that instance are consumed by whichever holds it at the moment",
			instance, ev.ClientAddr, is.addrs[len(is.addrs)-1])
		f.Suggestion = advice(DuplicateInstanceID)
		g.findings = append(g.findings, f)
		break
	}
	is.addrs = append(is.addrs, ev.ClientAddr)
	is.members = append(is.members, id)
}

// fenced makes a static_member_fenced finding for a request answered
// FENCED_INSTANCE_ID, once per member id.
func (e *Engine) fenced(g *groupState, ev *decode.Event, id, instance string) {
	if !g.once("fenced:" + id) {
		return
	}
	if instance == "" {
		instance = e.info(g, id).InstanceID // Heartbeat and SyncGroup name it from v3 only
	}
	f := newFinding(StaticMemberFenced, g.id, Warning, ev.At, id)
	m := e.info(g, id)
	m.ClientID, m.ClientAddr, m.InstanceID = ev.ClientID, ev.ClientAddr, instance
	f.Members = []Member{m}
	f.Evidence["instanceId"] = instance
	f.Evidence["api"] = decode.APIName(ev.APIKey)
	f.Evidence["error"] = kerr.FencedInstanceID.Message
	replacedBy := ""
	if is := g.instances[instance]; is != nil && len(is.members) > 0 {
		replacedBy = is.members[len(is.members)-1]
		if replacedBy != id {
			f.Evidence["replacedBy"] = replacedBy
			f.Members = append(f.Members, e.info(g, replacedBy))
		}
	}
	f.Explanation = fmt.Sprintf("the coordinator answered this member's %s with FENCED_INSTANCE_ID: another JoinGroup with group.instance.id %q took the instance over while this process was still running (a restart that began before the old process stopped, or two processes configured with the same instance id). The fenced process stops consuming; any offsets it had not committed are processed again by the new holder",
		decode.APIName(ev.APIKey), instance)
	f.Suggestion = advice(StaticMemberFenced)
	g.findings = append(g.findings, f)
}

// fencedRejoin makes a duplicate_instance_id finding when a fenced member
// tries to join again under its old member id: the process the instance
// was taken from is alive and wants it back. (The Java client stops on
// FENCED_INSTANCE_ID; franz-go keeps trying.)
func (e *Engine) fencedRejoin(g *groupState, ev *decode.Event, id, instance string) {
	if id == "" || instance == "" || !g.once("duplicate:"+instance) {
		return
	}
	f := newFinding(DuplicateInstanceID, g.id, Critical, ev.At, id)
	m := e.info(g, id)
	m.ClientID, m.ClientAddr, m.InstanceID = ev.ClientID, ev.ClientAddr, instance
	f.Members = []Member{m}
	addrs := []string{ev.ClientAddr}
	if is := g.instances[instance]; is != nil && len(is.members) > 0 {
		holder := is.members[len(is.members)-1]
		f.Members = append(f.Members, e.info(g, holder))
		f.Evidence["holder"] = holder
		addrs = append(addrs, is.addrs[len(is.addrs)-1])
	}
	f.Evidence["instanceId"] = instance
	f.Evidence["clientAddrs"] = addrs
	f.Evidence["error"] = kerr.FencedInstanceID.Message
	f.Explanation = fmt.Sprintf("group.instance.id %q is used by two live processes: after another process took the instance over, the fenced one (%s, from %s) tried to join again. One of them cannot consume; if it ever wins the instance back, the other is fenced in turn",
		instance, id, ev.ClientAddr)
	f.Suggestion = advice(DuplicateInstanceID)
	g.findings = append(g.findings, f)
}
