package config

import (
	"sort"
	"testing"
)

// TestOptionsAreFields checks that Options, the source of the flags, the
// help text and the README's table, names exactly the keys of Config's
// mapstructure tags, the fields Load decodes into: but --config, which
// names the file, and the secrets, read from the environment alone.
func TestOptionsAreFields(t *testing.T) {
	fields := fieldTypes()
	var missing []string
	seen := map[string]bool{}
	for _, o := range Options() {
		seen[o.Key] = true
		_, ok := fields[o.Key]
		switch {
		case o.Key == KeyConfig || o.EnvOnly:
			if ok {
				t.Errorf("option %s is a field; want it read apart from Unmarshal", o.Key)
			}
		case !ok:
			missing = append(missing, o.Key)
		}
	}
	if len(missing) > 0 {
		t.Errorf("options without a Config field tagged with their key: %v", missing)
	}
	var extra []string
	for k := range fields {
		if !seen[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("Config fields whose tag is no option's key: %v", extra)
	}
}
