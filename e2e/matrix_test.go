//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// matrixFamily is a client family, a column of the accuracy matrix
// (scenario 55) and a row of the healthy runs (scenario 46).
type matrixFamily struct {
	name string
	// client is the client software as docs/diagnosis.md names it.
	client string
	// reasons: the client sends a KIP-800 reason when it leaves, which
	// names the cause of a departure without any inference.
	reasons bool
}

// matrixFamilies are the columns, in order. java_consumer, the Java client
// on KIP-848's protocol, has its column; a cause runs it once the KIP-848
// rule of that kind exists (see matrixCauses).
var matrixFamilies = []matrixFamily{
	{"java_classic", "Java kafka-clients, classic protocol", true},      // LeaveGroup v5
	{"java_consumer", "Java kafka-clients, KIP-848 protocol", false},    // a leave heartbeat has no reason
	{"kafka_python", "kafka-python 2.3.3", false},                       // LeaveGroup v3
	{"librdkafka", "librdkafka 2.16.0 (confluent-kafka 2.16.1)", false}, // LeaveGroup v1
	{"kafkajs", "kafkajs 2.2.4", false},                                 // LeaveGroup v3
	{"franz_go", "franz-go (go.mod's)", true},                           // LeaveGroup v5
}

// matrixCell is what the matrix knows of one kind for one family.
type matrixCell struct {
	expected bool
	found    int // findings of the kind that name the member expected
}

// diagnoseAll runs `kproxy diagnose JOURNAL --format json` over every
// group of the journal.
func (k *kproxy) diagnoseAll() []finding {
	k.t.Helper()
	return k.diagnoseArgs()
}

// kindsTable renders the matrix of kinds × families as Markdown: ✓ n (the
// kind found n times for the member that caused it), ✗ (expected, not
// found), · (not run for that family); then each family's client.
func kindsTable(kinds []string, cells map[string]map[string]matrixCell) string {
	var b strings.Builder
	b.WriteString("| kind |")
	for _, f := range matrixFamilies {
		fmt.Fprintf(&b, " %s |", f.name)
	}
	b.WriteString("\n| --- |")
	for range matrixFamilies {
		b.WriteString(" --- |")
	}
	b.WriteString("\n| sends reasons |")
	for _, f := range matrixFamilies {
		if f.reasons {
			b.WriteString(" yes |")
		} else {
			b.WriteString(" no |")
		}
	}
	b.WriteString("\n")
	for _, kind := range kinds {
		fmt.Fprintf(&b, "| `%s` |", kind)
		for _, f := range matrixFamilies {
			c := cells[kind][f.name]
			switch {
			case !c.expected:
				b.WriteString(" · |")
			case c.found == 0:
				b.WriteString(" ✗ missing |")
			default:
				fmt.Fprintf(&b, " ✓ %d |", c.found)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	for _, f := range matrixFamilies {
		fmt.Fprintf(&b, "- `%s`: %s\n", f.name, f.client)
	}
	return b.String()
}

// healthyRow is one family's healthy run (scenario 46).
type healthyRow struct {
	family        string
	memberMinutes float64
	bySeverity    map[string]int
}

// healthyTable renders the healthy runs as Markdown: findings by severity
// and false findings (warning or critical) per member-minute.
func healthyTable(rows []healthyRow) string {
	var b strings.Builder
	b.WriteString("| family | member-minutes | critical | warning | info | false findings per member-minute |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	var minutes float64
	var falses int
	for _, r := range rows {
		f := r.bySeverity["critical"] + r.bySeverity["warning"]
		minutes += r.memberMinutes
		falses += f
		fmt.Fprintf(&b, "| %s | %.0f | %d | %d | %d | %.3f |\n", r.family, r.memberMinutes,
			r.bySeverity["critical"], r.bySeverity["warning"], r.bySeverity["info"], float64(f)/r.memberMinutes)
	}
	if minutes > 0 {
		fmt.Fprintf(&b, "| all | %.0f | | | | %.3f |\n", minutes, float64(falses)/minutes)
	}
	return b.String()
}

// names reports whether a finding names a member of that client id (or
// any member when clientID is empty).
func (f finding) names(clientID string) bool {
	if clientID == "" {
		return true
	}
	for _, m := range f.Members {
		if m.ClientID == clientID {
			return true
		}
	}
	return false
}

// familyByName is the family of that name; the test fails on an unknown one.
func familyByName(t *testing.T, name string) matrixFamily {
	t.Helper()
	for _, f := range matrixFamilies {
		if f.name == name {
			return f
		}
	}
	t.Fatalf("unknown client family %q", name)
	return matrixFamily{}
}
