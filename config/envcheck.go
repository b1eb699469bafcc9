package config

import (
	"fmt"
	"strings"
)

// unknownEnv returns a warning for each KPROXY_* variable in env that is
// not a setting's (a typo, such as KPROXY_UPSTREM, would otherwise be
// ignored without a word), naming the nearest setting's variable.
func unknownEnv(env []string) []string {
	known := make(map[string]bool)
	for _, o := range Options() {
		known[EnvVar(o.Key)] = true
	}
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix+"_") || known[name] {
			continue
		}
		nearest, best := "", -1
		for k := range known {
			if d := editDistance(name, k); best < 0 || d < best || d == best && k < nearest {
				nearest, best = k, d
			}
		}
		out = append(out, fmt.Sprintf("environment variable %s is not a kproxy setting and is ignored (did you mean %s?)", name, nearest))
	}
	return out
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
