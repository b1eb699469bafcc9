package diagnose

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocListsEveryKind keeps docs/diagnosis.md equal to the code: one
// section per kind in the order of Kinds, each with its meaning,
// detection, false positives, and the suggestion the code gives, which
// names every client library listed.
func TestDocListsEveryKind(t *testing.T) {
	b, err := os.ReadFile("../docs/diagnosis.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var got []Kind
	for _, m := range regexp.MustCompile("(?m)^### `([a-z_]+)`$").FindAllStringSubmatch(doc, -1) {
		got = append(got, Kind(m[1]))
	}
	if !slices.Equal(got, Kinds) {
		t.Fatalf("docs/diagnosis.md sections %v; want %v", got, Kinds)
	}
	sections := regexp.MustCompile("(?m)^### ").Split(doc, -1)[1:]
	for i, k := range Kinds {
		t.Run(string(k), func(t *testing.T) {
			s := sections[i]
			for _, part := range []string{"**Meaning** — ", "**Detection** — ", "**False positives** — "} {
				if !strings.Contains(s, part) {
					t.Errorf("section lacks %q", part)
				}
			}
			if !strings.Contains(s, "**Fix** — "+advice(k)+"\n") {
				t.Errorf("section's fix is not the code's suggestion:\n%s", advice(k))
			}
			if k == PollTimeoutWarning || k == SessionTimeoutWarning {
				return // they refer to their eviction's fix
			}
			for _, client := range []string{"Java", "librdkafka", "kafka-python", "kafkajs", "franz-go"} {
				if !strings.Contains(advice(k), client) {
					t.Errorf("suggestion does not name %s", client)
				}
			}
		})
	}
}
