package timeline

import (
	"fmt"
	"strings"
)

// maxListed is how many partitions (or runs of partitions) a timeline line
// lists before it summarises the rest as a count: a commit of 100,000
// partitions must not make a 5 MB log line. Reports keep every partition.
const maxListed = 8

// writeMore writes " … and N more partitions" when n > 0.
func writeMore(b *strings.Builder, n int) {
	if n > 0 {
		fmt.Fprintf(b, " … and %d more partitions", n)
	}
}

// summarisedField is v, an entry field, cut to its first maxListed
// partitions when it is a map of partitions by topic, with how many were
// left out (0 when none): for log fields, not for reports.
func summarisedField(v any) (any, int) {
	switch m := v.(type) {
	case map[string]map[int32]int64:
		return cutPartitions(m)
	case map[string]map[int32]string:
		return cutPartitions(m)
	}
	return v, 0
}

// cutPartitions keeps the first maxListed partitions of m, by topic then
// partition, and says how many it left out.
func cutPartitions[V any](m map[string]map[int32]V) (map[string]map[int32]V, int) {
	total := 0
	for _, ps := range m {
		total += len(ps)
	}
	if total <= maxListed {
		return m, 0
	}
	out := make(map[string]map[int32]V)
	kept := 0
	for _, t := range sortedKeys(m) {
		for _, p := range sortedKeys(m[t]) {
			if kept == maxListed {
				return out, total - kept
			}
			if out[t] == nil {
				out[t] = make(map[int32]V)
			}
			out[t][p] = m[t][p]
			kept++
		}
	}
	return out, total - kept
}
