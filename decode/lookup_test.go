package decode

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLookupTables requires the per-exchange lookups (lookupAPI,
// reuseIndex) to agree with the lists they index (apis, reusedKeys) for
// every key.
func TestLookupTables(t *testing.T) {
	for key := int16(-2); key < 300; key++ {
		want, wantOK := apis[kmsg.Key(key)]
		got, ok := lookupAPI(key)
		if ok != wantOK || got.group != want.group || (got.decode == nil) != (want.decode == nil) {
			t.Errorf("lookupAPI(%d) = %+v, %v; apis has %+v, %v", key, got, ok, want, wantOK)
		}
		if Observed(key) != wantOK || GroupAPI(key) != want.group {
			t.Errorf("key %d: Observed %v GroupAPI %v; apis has %+v, %v", key, Observed(key), GroupAPI(key), want, wantOK)
		}
		if i := reuseIndex(key); i != slices.Index(reusedKeys, key) {
			t.Errorf("reuseIndex(%d) = %d; reusedKeys has it at %d", key, i, slices.Index(reusedKeys, key))
		}
	}
}
