//go:build e2e

package e2e

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/proxy"
)

// TestScenario50: the ApiVersions audit. The broker's own answer and the
// answer clients get through kproxy differ only where proxy.VersionCaps
// says, with its reason; the features (supported and finalized, with their
// epoch) are the same. A client that learns what the broker supports from
// kproxy therefore takes the same paths it takes directly (transactions v2,
// share groups, streams groups, ...).
func TestScenario50(t *testing.T) {
	k := startKproxy(t, false)
	if k == nil {
		t.Fatal("scenario 50 compares kproxy with the broker: it has no E2E_MODE=direct")
	}
	direct := apiVersions(t, brokerAddr)
	proxied := apiVersions(t, bootstrap(k))

	if direct.ErrorCode != 0 || proxied.ErrorCode != 0 {
		t.Fatalf("ApiVersions error codes: direct %d, through kproxy %d", direct.ErrorCode, proxied.ErrorCode)
	}
	caps := make(map[int16]proxy.VersionCap)
	for _, c := range proxy.VersionCaps() {
		caps[c.Key] = c
	}
	got := make(map[int16]kmsg.ApiVersionsResponseApiKey)
	for _, k := range proxied.ApiKeys {
		got[k.ApiKey] = k
	}
	differences := 0
	for _, want := range direct.ApiKeys {
		name := kmsg.NameForKey(want.ApiKey)
		have, ok := got[want.ApiKey]
		delete(got, want.ApiKey)
		c, capped := caps[want.ApiKey]
		switch {
		case capped && want.MinVersion > c.MaxVersion:
			if ok {
				t.Errorf("%s: broker v%d-%d, kproxy's cap v%d; through kproxy v%d-%d, want it left out",
					name, want.MinVersion, want.MaxVersion, c.MaxVersion, have.MinVersion, have.MaxVersion)
			}
			differences++
			t.Logf("%s: broker v%d-%d, left out through kproxy: %s", name, want.MinVersion, want.MaxVersion, c.Reason)
		case !ok:
			t.Errorf("%s: broker v%d-%d, missing through kproxy", name, want.MinVersion, want.MaxVersion)
		case capped && want.MaxVersion > c.MaxVersion:
			if have.MinVersion != want.MinVersion || have.MaxVersion != c.MaxVersion {
				t.Errorf("%s: broker v%d-%d; through kproxy v%d-%d, want v%d-%d (capped: %s)", name,
					want.MinVersion, want.MaxVersion, have.MinVersion, have.MaxVersion, want.MinVersion, c.MaxVersion, c.Reason)
			}
			differences++
			t.Logf("%s: broker v%d-%d, through kproxy up to v%d: %s", name, want.MinVersion, want.MaxVersion, c.MaxVersion, c.Reason)
		case have.MinVersion != want.MinVersion || have.MaxVersion != want.MaxVersion:
			t.Errorf("%s: broker v%d-%d; through kproxy v%d-%d, and kproxy's policy allows no difference",
				name, want.MinVersion, want.MaxVersion, have.MinVersion, have.MaxVersion)
		}
	}
	for key, have := range got {
		t.Errorf("%s: v%d-%d through kproxy, not advertised by the broker", kmsg.NameForKey(key), have.MinVersion, have.MaxVersion)
	}
	features := func(r *kmsg.ApiVersionsResponse) any {
		return []any{r.SupportedFeatures, r.FinalizedFeaturesEpoch, r.FinalizedFeatures}
	}
	if !reflect.DeepEqual(features(direct), features(proxied)) {
		t.Errorf("features differ:\nbroker       %+v\nthrough kproxy %+v", features(direct), features(proxied))
	}
	for _, f := range direct.FinalizedFeatures {
		t.Logf("finalized feature %s = %d, passed on", f.Name, f.MaxVersionLevel)
	}
	t.Logf("%d APIs advertised by the broker; %d differ through kproxy, each for the reason above", len(direct.ApiKeys), differences)
}

// apiVersions asks addr for its ApiVersions at the newest version kmsg
// knows, on a connection of its own.
func apiVersions(t *testing.T, addr string) *kmsg.ApiVersionsResponse {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions from %s: %v", addr, err)
	}
	return resp
}
