package gcconfig

import (
	"errors"
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// TestSetServeGOGC checks that SetServe sets Serve when GOGC is unset and
// leaves the runtime's target, which GOGC set, alone otherwise.
func TestSetServeGOGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for _, c := range []struct {
		gogc string // "" unset
		want int
	}{
		{"", Serve},
		{"200", 100}, // the runtime read GOGC at start; here it is what the test set
	} {
		debug.SetGCPercent(100)
		setenv(t, "GOGC", c.gogc)
		if _, err := setServe(memlimit.Limit(1 << 30)); err != nil {
			t.Fatal(err)
		}
		if got := debug.SetGCPercent(100); got != c.want {
			t.Errorf("GOGC=%q: the collector's target is %d, want %d", c.gogc, got, c.want)
		}
	}
}

// TestSetServeLimit checks the soft memory limit SetServe sets from the
// cgroup's, and that GOMEMLIMIT and AUTOMEMLIMIT take precedence.
func TestSetServeLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	const gib = 1 << 30
	failed := errors.New("memory.max: bad value")
	for _, c := range []struct {
		name       string
		gomemlimit string // "" unset; when set, the runtime holds 123 MiB as if read at start
		automem    string // "" unset
		cgroup     memlimit.Provider
		want       Limit
		wantErr    error
	}{
		{name: "cgroup", cgroup: memlimit.Limit(gib),
			want: Limit{Bytes: gib * 9 / 10, From: "cgroup"}},
		{name: "cgroup without a limit", cgroup: fails(memlimit.ErrNoLimit),
			want: Limit{Bytes: math.MaxInt64}},
		{name: "no cgroup", cgroup: fails(memlimit.ErrNoCgroup),
			want: Limit{Bytes: math.MaxInt64}},
		{name: "no cgroups here", cgroup: fails(memlimit.ErrCgroupsNotSupported),
			want: Limit{Bytes: math.MaxInt64}},
		{name: "unreadable", cgroup: fails(failed),
			want: Limit{Bytes: math.MaxInt64}, wantErr: failed},
		{name: "GOMEMLIMIT", gomemlimit: "123MiB", cgroup: memlimit.Limit(gib),
			want: Limit{Bytes: 123 << 20, From: "GOMEMLIMIT"}},
		{name: "AUTOMEMLIMIT ratio", automem: "0.5", cgroup: memlimit.Limit(gib),
			want: Limit{Bytes: gib / 2, From: "cgroup"}},
		{name: "AUTOMEMLIMIT off", automem: "off", cgroup: memlimit.Limit(gib),
			want: Limit{Bytes: math.MaxInt64}},
		{name: "AUTOMEMLIMIT not a number", automem: "abc", cgroup: memlimit.Limit(gib),
			want: Limit{Bytes: math.MaxInt64}, wantErr: ErrAutomemlimit},
		{name: "AUTOMEMLIMIT above 1", automem: "1.5", cgroup: memlimit.Limit(gib),
			want: Limit{Bytes: math.MaxInt64}, wantErr: ErrAutomemlimit},
	} {
		t.Run(c.name, func(t *testing.T) {
			debug.SetMemoryLimit(math.MaxInt64)
			setenv(t, "GOMEMLIMIT", c.gomemlimit)
			setenv(t, "AUTOMEMLIMIT", c.automem)
			if c.gomemlimit != "" {
				debug.SetMemoryLimit(123 << 20)
			}
			got, err := setServe(c.cgroup)
			if !errors.Is(err, c.wantErr) {
				t.Errorf("error %v, want %v", err, c.wantErr)
			}
			if got != c.want {
				t.Errorf("limit %+v, want %+v", got, c.want)
			}
			if runtime := debug.SetMemoryLimit(-1); runtime != c.want.Bytes {
				t.Errorf("the runtime's limit is %d, want %d", runtime, c.want.Bytes)
			}
		})
	}
}

// TestLimitString checks the limit as serve logs it.
func TestLimitString(t *testing.T) {
	for _, c := range []struct {
		l    Limit
		want string
	}{
		{Limit{Bytes: math.MaxInt64}, "none"},
		{Limit{Bytes: 921 << 20, From: "cgroup"}, "921 MiB from cgroup"},
	} {
		if got := c.l.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.l, got, c.want)
		}
	}
}

// setenv sets key to value for the test, or unsets it when value is "".
func setenv(t *testing.T, key, value string) {
	t.Setenv(key, value)
	if value == "" {
		os.Unsetenv(key)
	}
}

// fails is a cgroup provider that fails with err.
func fails(err error) memlimit.Provider {
	return func() (uint64, error) { return 0, err }
}
