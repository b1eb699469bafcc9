package decode

import "testing"

// TestLookupTables requires the per-exchange lookups (lookupAPI, poolFor)
// to agree with the maps they index (apis, reusedPools) for every key.
func TestLookupTables(t *testing.T) {
	for key := int16(-2); key < 300; key++ {
		want, wantOK := apis[key]
		got, ok := lookupAPI(key)
		if ok != wantOK || got.group != want.group || (got.decode == nil) != (want.decode == nil) {
			t.Errorf("lookupAPI(%d) = %+v, %v; apis has %+v, %v", key, got, ok, want, wantOK)
		}
		if Observed(key) != wantOK || GroupAPI(key) != want.group {
			t.Errorf("key %d: Observed %v GroupAPI %v; apis has %+v, %v", key, Observed(key), GroupAPI(key), want, wantOK)
		}
		if poolFor(key) != reusedPools[key] {
			t.Errorf("poolFor(%d) is not reusedPools[%d]", key, key)
		}
	}
}
