package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/timeline"
)

// load parses args as serve's flags, with env as the only KPROXY_*
// variables and file (if not "") as the config file's YAML text.
func load(t *testing.T, args []string, env map[string]string, file string) (Config, error) {
	t.Helper()
	clearEnv(t)
	for k, v := range env {
		t.Setenv(k, v)
	}
	if file != "" {
		path := filepath.Join(t.TempDir(), "kproxy.yaml")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--config", path)
	}
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	Flags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return Load(fs)
}

// clearEnv unsets every KPROXY_* variable for the test's duration.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, EnvPrefix+"_") {
			t.Setenv(k, "") // restored after the test
			os.Unsetenv(k)
		}
	}
}

func TestLoadPrecedence(t *testing.T) {
	const file = `
upstream: [file:1, file:2]
listen: 127.0.0.1:1001
log-level: warn
dial-timeout: 3s
max-frame-size: 1MiB
observer-queue: 10
`
	tests := []struct {
		name string
		args []string
		env  map[string]string
		file string
		get  func(Config) any
		want any
	}{
		{"default", nil, nil, "upstream: f:1", func(c Config) any { return c.Listen }, DefaultListen},
		{"file over default", nil, nil, file, func(c Config) any { return c.Listen }, "127.0.0.1:1001"},
		{"env over file", nil, map[string]string{"KPROXY_LISTEN": "127.0.0.1:1002"}, file,
			func(c Config) any { return c.Listen }, "127.0.0.1:1002"},
		{"flag over env", []string{"--listen", "127.0.0.1:1003"}, map[string]string{"KPROXY_LISTEN": "127.0.0.1:1002"}, file,
			func(c Config) any { return c.Listen }, "127.0.0.1:1003"},

		{"list from file", nil, nil, file, func(c Config) any { return c.Upstreams }, []string{"file:1", "file:2"}},
		{"list from env, commas", nil, map[string]string{"KPROXY_UPSTREAM": "env:1, env:2,"}, file,
			func(c Config) any { return c.Upstreams }, []string{"env:1", "env:2"}},
		{"list from flags", []string{"--upstream", "flag:1,flag:2", "--upstream", "flag:3"},
			map[string]string{"KPROXY_UPSTREAM": "env:1"}, file,
			func(c Config) any { return c.Upstreams }, []string{"flag:1", "flag:2", "flag:3"}},

		{"duration default", nil, nil, "upstream: f:1", func(c Config) any { return c.DialTimeout }, DefaultDialTimeout},
		{"duration from file", nil, nil, file, func(c Config) any { return c.DialTimeout }, 3 * time.Second},
		{"duration from env", nil, map[string]string{"KPROXY_DIAL_TIMEOUT": "4s"}, file,
			func(c Config) any { return c.DialTimeout }, 4 * time.Second},
		{"duration from flag", []string{"--dial-timeout=5s"}, map[string]string{"KPROXY_DIAL_TIMEOUT": "4s"}, file,
			func(c Config) any { return c.DialTimeout }, 5 * time.Second},

		{"size default", nil, nil, "upstream: f:1", func(c Config) any { return c.MaxFrameSize }, int32(100 << 20)},
		{"size from file", nil, nil, file, func(c Config) any { return c.MaxFrameSize }, int32(1 << 20)},
		{"size from env, bytes", nil, map[string]string{"KPROXY_MAX_FRAME_SIZE": "200000"}, file,
			func(c Config) any { return c.MaxFrameSize }, int32(200000)},
		{"group size default", nil, nil, "upstream: f:1", func(c Config) any { return c.MaxGroupFrameSize }, int32(16 << 20)},
		{"group size from flag", []string{"--max-group-frame-size", "2MiB"}, nil, "upstream: f:1",
			func(c Config) any { return c.MaxGroupFrameSize }, int32(2 << 20)},
		{"size from flag", []string{"--max-frame-size", "1.5 MiB"}, map[string]string{"KPROXY_MAX_FRAME_SIZE": "200000"}, file,
			func(c Config) any { return c.MaxFrameSize }, int32(3 << 19)},

		{"int from file", nil, nil, file, func(c Config) any { return c.ObserverQueue }, 10},
		{"int from env", nil, map[string]string{"KPROXY_OBSERVER_QUEUE": "20"}, file,
			func(c Config) any { return c.ObserverQueue }, 20},
		{"int from flag", []string{"--observer-queue", "30"}, map[string]string{"KPROXY_OBSERVER_QUEUE": "20"}, file,
			func(c Config) any { return c.ObserverQueue }, 30},

		{"limits: max observed frame from env", nil, map[string]string{"KPROXY_MAX_OBSERVED_FRAME_SIZE": "1MiB"}, file,
			func(c Config) any { return c.MaxObservedFrameSize }, int32(1 << 20)},
		{"limits: max buffered bytes from flag", []string{"--max-buffered-bytes", "1GiB"}, nil, file,
			func(c Config) any { return c.MaxBufferedBytes }, int64(1 << 30)},
		{"limits: frame read timeout from env", nil, map[string]string{"KPROXY_FRAME_READ_TIMEOUT": "5s"}, file,
			func(c Config) any { return c.FrameReadTimeout }, 5 * time.Second},
		{"limits: max connections default", nil, nil, file, func(c Config) any { return c.MaxConnections }, 0},
		{"limits: max connections from flag", []string{"--max-connections=500"}, nil, file,
			func(c Config) any { return c.MaxConnections }, 500},
		{"limits: max connections per ip from env", nil, map[string]string{"KPROXY_MAX_CONNECTIONS_PER_IP": "7"}, file,
			func(c Config) any { return c.MaxConnectionsPerIP }, 7},
		{"limits: idle timeout default", nil, nil, file, func(c Config) any { return c.IdleTimeout }, 10 * time.Minute},
		{"limits: idle timeout from flag", []string{"--idle-timeout", "1m"}, nil, file,
			func(c Config) any { return c.IdleTimeout }, time.Minute},

		{"admin default is loopback", nil, nil, "upstream: f:1", func(c Config) any { return c.Admin }, "127.0.0.1:9644"},
		{"admin off from env", nil, map[string]string{"KPROXY_ADMIN": ""}, "upstream: f:1",
			func(c Config) any { return c.Admin }, ""},
		{"admin off from file", nil, nil, "upstream: f:1\nadmin: \"\"", func(c Config) any { return c.Admin }, ""},
		{"admin off from flag", []string{"--admin="}, nil, "upstream: f:1", func(c Config) any { return c.Admin }, ""},

		{"config file from env", nil, nil, "", func(c Config) any { return c.LogLevel }, "warn"},
		{"no config file", []string{"--upstream", "f:1"}, nil, "", func(c Config) any { return c.LogLevel }, "info"},

		{"broker listeners from file", nil, nil, "upstream: f:1\nbroker-listeners:\n  1: 127.0.0.1:29092\n  2: 127.0.0.1:29093\n",
			func(c Config) any { return c.BrokerListeners },
			map[int32]string{1: "127.0.0.1:29092", 2: "127.0.0.1:29093"}},
		{"broker listeners from env", nil, map[string]string{"KPROXY_BROKER_LISTENERS": "7=h:1, 8=h:2"},
			"upstream: f:1\nbroker-listeners:\n  1: 127.0.0.1:29092\n",
			func(c Config) any { return c.BrokerListeners }, map[int32]string{7: "h:1", 8: "h:2"}},
		{"no broker listeners", nil, nil, "upstream: f:1", func(c Config) any { return c.BrokerListeners },
			map[int32]string(nil)},

		{"fsync default", nil, nil, "upstream: f:1", func(c Config) any { return c.JournalOptions.Fsync }, journal.Fsync(time.Second)},
		{"fsync always from file", nil, nil, "upstream: f:1\njournal-fsync: always",
			func(c Config) any { return c.JournalOptions.Fsync }, journal.FsyncAlways},
		{"fsync never from env", nil, map[string]string{"KPROXY_JOURNAL_FSYNC": "never"}, "upstream: f:1\njournal-fsync: always",
			func(c Config) any { return c.JournalOptions.Fsync }, journal.FsyncNever},
		{"fsync interval from flag", []string{"--journal-fsync", "250ms"}, map[string]string{"KPROXY_JOURNAL_FSYNC": "never"},
			"upstream: f:1", func(c Config) any { return c.JournalOptions.Fsync }, journal.Fsync(250 * time.Millisecond)},
		{"segment size from file", nil, nil, "upstream: f:1\njournal-segment-size: 8MiB",
			func(c Config) any { return c.JournalOptions.SegmentBytes }, int64(8 << 20)},
		{"retain size above 2GiB from env", nil, map[string]string{"KPROXY_JOURNAL_RETAIN_SIZE": "50GiB"}, "upstream: f:1",
			func(c Config) any { return c.JournalOptions.RetainBytes }, int64(50 << 30)},
		{"retain size 0 from file", nil, nil, "upstream: f:1\njournal-retain-size: 0",
			func(c Config) any { return c.JournalOptions.RetainBytes }, int64(0)},
		{"segment age from flag", []string{"--journal-segment-age", "10m"}, nil, "upstream: f:1",
			func(c Config) any { return c.JournalOptions.SegmentAge }, 10 * time.Minute},
		{"retain age bare 0 from file", nil, nil, "upstream: f:1\njournal-retain-age: 0",
			func(c Config) any { return c.JournalOptions.RetainAge }, time.Duration(0)},
		{"report from env", nil, map[string]string{"KPROXY_REPORT": "/tmp/r.json"}, "upstream: f:1",
			func(c Config) any { return c.Report }, "/tmp/r.json"},
		{"storm settings from file", nil, nil, "upstream: f:1\nstorm-rebalances: 5\nstorm-window: 10m",
			func(c Config) any { return [2]any{c.StormRebalances, c.StormWindow} }, [2]any{5, 10 * time.Minute}},
		{"storm settings from flags", []string{"--storm-rebalances=4", "--storm-window=1m"}, nil,
			"upstream: f:1\nstorm-rebalances: 5\nstorm-window: 10m",
			func(c Config) any { return [2]any{c.StormRebalances, c.StormWindow} }, [2]any{4, time.Minute}},

		{"bool default", nil, nil, "upstream: f:1", func(c Config) any { return c.UpstreamTLS }, false},
		{"bool from file", nil, nil, "upstream: f:1\nupstream-tls: true", func(c Config) any { return c.UpstreamTLS }, true},
		{"bool from env over file", nil, map[string]string{"KPROXY_UPSTREAM_TLS": "false"}, "upstream: f:1\nupstream-tls: true",
			func(c Config) any { return c.UpstreamTLS }, false},
		{"bool flag without value over env", []string{"--upstream-tls"}, map[string]string{"KPROXY_UPSTREAM_TLS": "false"},
			"upstream: f:1", func(c Config) any { return c.UpstreamTLS }, true},
		{"upstream TLS settings from env", nil, map[string]string{"KPROXY_UPSTREAM_TLS": "1",
			"KPROXY_UPSTREAM_SERVER_NAME": "kafka.internal", "KPROXY_UPSTREAM_INSECURE_SKIP_VERIFY": "true"}, "upstream: f:1",
			func(c Config) any { return [3]any{c.UpstreamTLS, c.UpstreamServerName, c.UpstreamInsecureSkipVerify} },
			[3]any{true, "kafka.internal", true}},
		{"tls reload interval from flag", []string{"--tls-reload-interval=1m"}, nil, "upstream: f:1",
			func(c Config) any { return c.TLSReloadInterval }, time.Minute},
		{"timeline retain default", nil, nil, "upstream: f:1",
			func(c Config) any { return c.TimelineRetain }, timeline.DefaultRetention},
		{"timeline retain from env", nil, map[string]string{"KPROXY_TIMELINE_RETAIN": "50,2h"}, "upstream: f:1",
			func(c Config) any { return c.TimelineRetain }, timeline.Retention{Generations: 50, MaxAge: 2 * time.Hour}},
		{"timeline retain unlimited from flag", []string{"--timeline-retain", "0,0"}, nil, "upstream: f:1\ntimeline-retain: 9,1h",
			func(c Config) any { return c.TimelineRetain }, timeline.Retention{}},
		{"timeline retain 0 from flag", []string{"--timeline-retain", "0"}, nil, "upstream: f:1\ntimeline-retain: 9,1h",
			func(c Config) any { return c.TimelineRetain }, timeline.Retention{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tt.env
			if tt.name == "config file from env" {
				path := filepath.Join(t.TempDir(), "env.yaml")
				if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
					t.Fatal(err)
				}
				env = map[string]string{"KPROXY_CONFIG": path}
			}
			c, err := load(t, tt.args, env, tt.file)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got := tt.get(c); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v; want %#v", got, tt.want)
			}
		})
	}
}

func TestLoadDefaults(t *testing.T) {
	c, err := load(t, []string{"--upstream", "127.0.0.1:9092"}, nil, "")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := Default()
	want.Upstreams = []string{"127.0.0.1:9092"}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Load() = %+v; want %+v", c, want)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		file string
		want string // the whole message; a file path is written as FILE
	}{
		{"listen from env names the variable", nil, map[string]string{"KPROXY_LISTEN": "abc", "KPROXY_UPSTREAM": "h:1"}, "",
			`config: listen "abc": missing port (from KPROXY_LISTEN)`},
		{"listen from flag names the flag", []string{"--listen", "abc", "--upstream", "h:1"}, nil, "",
			`config: listen "abc": missing port (from --listen)`},
		{"listen from file names the file", nil, nil, "upstream: h:1\nlisten: abc",
			`config: listen "abc": missing port (from FILE)`},
		{"missing upstream", nil, nil, "",
			`config: upstream: required: at least one seed broker HOST:PORT`},
		{"unknown file key", nil, nil, "upstream: h:1\nlisen: abc\nlog:\n  level: x",
			"config: lisen: unknown key (from FILE)\nconfig: log.level: unknown key (from FILE)"},
		{"config key in file", nil, nil, "upstream: h:1\nconfig: other.yaml",
			`config: config: unknown key (from FILE)`},
		{"duration without unit in file", nil, nil, "upstream: h:1\ndial-timeout: 5",
			`config: dial-timeout "5": missing unit; want a duration like 10s or 1m30s (from FILE)`},
		{"duration without unit in env", nil, map[string]string{"KPROXY_SHUTDOWN_TIMEOUT": "30", "KPROXY_UPSTREAM": "h:1"}, "",
			`config: shutdown-timeout "30": missing unit; want a duration like 10s or 1m30s (from KPROXY_SHUTDOWN_TIMEOUT)`},
		{"duration garbage", nil, map[string]string{"KPROXY_DIAL_TIMEOUT": "soon", "KPROXY_UPSTREAM": "h:1"}, "",
			`config: dial-timeout "soon": not a duration; want one like 10s or 1m30s (from KPROXY_DIAL_TIMEOUT)`},
		{"int garbage", nil, map[string]string{"KPROXY_OBSERVER_QUEUE": "many", "KPROXY_UPSTREAM": "h:1"}, "",
			`config: observer-queue "many": not an integer (from KPROXY_OBSERVER_QUEUE)`},
		{"size garbage", []string{"--max-frame-size", "big", "--upstream", "h:1"}, nil, "",
			`config: max-frame-size "big": not a size; want bytes or a number with KiB, MiB or GiB (from --max-frame-size)`},
		{"size too big", nil, nil, "upstream: h:1\nmax-frame-size: 2GiB",
			`config: max-frame-size "2GiB": out of range (0 to 2GiB-1) (from FILE)`},
		{"size too small", nil, nil, "upstream: h:1\nmax-frame-size: 1KiB",
			`config: max-frame-size "1024": below the minimum of 65536 bytes (64KiB) (from FILE)`},
		{"group size garbage", nil, map[string]string{"KPROXY_MAX_GROUP_FRAME_SIZE": "lots"}, "upstream: h:1",
			`config: max-group-frame-size "lots": not a size; want bytes or a number with KiB, MiB or GiB (from KPROXY_MAX_GROUP_FRAME_SIZE)`},
		{"listen as a list", nil, nil, "upstream: h:1\nlisten: [a, b]",
			`config: listen "[a b]": want a single value, not a list or map (from FILE)`},
		{"upstream as a map", nil, nil, "upstream: {a: b}",
			`config: upstream "map[a:b]": want a list or a comma-separated string (from FILE)`},
		{"broker listener bad node id", nil, nil, "upstream: h:1\nbroker-listeners:\n  one: h:1",
			`config: broker-listeners.one: node id is not a 32-bit integer (from FILE)`},
		{"broker listener env without equals", nil, map[string]string{"KPROXY_BROKER_LISTENERS": "h:1", "KPROXY_UPSTREAM": "h:1"}, "",
			`config: broker-listeners "h:1": want NODE_ID=HOST:PORT (from KPROXY_BROKER_LISTENERS)`},
		{"broker listener bad address", nil, nil, "upstream: h:1\nbroker-listeners:\n  3: nowhere",
			`config: broker-listeners.3 "nowhere": missing port (from FILE)`},
		{"empty env is a value", nil, map[string]string{"KPROXY_LOG_FORMAT": "", "KPROXY_UPSTREAM": "h:1"}, "",
			`config: log-format: want console or json (from KPROXY_LOG_FORMAT)`},
		{"fsync garbage", []string{"--journal-fsync", "sometimes", "--upstream", "h:1"}, nil, "",
			`config: journal-fsync "sometimes": want always, never or an interval such as 1s (from --journal-fsync)`},
		{"fsync without unit in file", nil, nil, "upstream: h:1\njournal-fsync: 5",
			`config: journal-fsync "5": missing unit; want always, never or an interval such as 1s (from FILE)`},
		{"fsync too often", nil, map[string]string{"KPROXY_JOURNAL_FSYNC": "100us", "KPROXY_UPSTREAM": "h:1"}, "",
			`config: journal-fsync "100us": interval below 1ms; want always, never or an interval such as 1s (from KPROXY_JOURNAL_FSYNC)`},
		{"fsync empty", nil, map[string]string{"KPROXY_JOURNAL_FSYNC": "", "KPROXY_UPSTREAM": "h:1"}, "",
			`config: journal-fsync: empty; want always, never or an interval such as 1s (from KPROXY_JOURNAL_FSYNC)`},
		{"segment size garbage", nil, nil, "upstream: h:1\njournal-segment-size: lots",
			`config: journal-segment-size "lots": not a size; want bytes or a number with KiB, MiB or GiB (from FILE)`},
		{"segment size too small", []string{"--journal-segment-size", "1KiB", "--upstream", "h:1"}, nil, "",
			`config: journal-segment-size "1024": below the minimum of 65536 bytes (64KiB) (from --journal-segment-size)`},
		{"retain size negative", nil, map[string]string{"KPROXY_JOURNAL_RETAIN_SIZE": "-1", "KPROXY_UPSTREAM": "h:1"}, "",
			`config: journal-retain-size "-1": out of range (0 to 1048576GiB) (from KPROXY_JOURNAL_RETAIN_SIZE)`},
		{"retain size below segment size", nil, nil, "upstream: h:1\njournal-retain-size: 1MiB\njournal-segment-size: 2MiB",
			`config: journal-retain-size "1048576": smaller than journal-segment-size (2097152 bytes): not even one whole segment would be kept; 0 means no limit (from FILE)`},
		{"retain age negative", []string{"--journal-retain-age=-1h", "--upstream", "h:1"}, nil, "",
			`config: journal-retain-age "-1h0m0s": must not be negative (0 means no limit) (from --journal-retain-age)`},
		{"segment age without unit", nil, nil, "upstream: h:1\njournal-segment-age: 60",
			`config: journal-segment-age "60": missing unit; want a duration like 10s or 1m30s (from FILE)`},
		{"storm rebalances garbage", nil, map[string]string{"KPROXY_STORM_REBALANCES": "few", "KPROXY_UPSTREAM": "h:1"}, "",
			`config: storm-rebalances "few": not an integer (from KPROXY_STORM_REBALANCES)`},
		{"storm rebalances too low", []string{"--storm-rebalances", "1", "--upstream", "h:1"}, nil, "",
			`config: storm-rebalances "1": below the minimum of 2 (one rebalance is not a storm) (from --storm-rebalances)`},
		{"storm window zero", nil, nil, "upstream: h:1\nstorm-window: 0s",
			`config: storm-window "0s": must be positive (from FILE)`},
		{"timeline retain garbage", nil, nil, "upstream: h:1\ntimeline-retain: forever",
			`config: timeline-retain "forever": want GENERATIONS,AGE such as 10,24h (0 for no limit) (from FILE)`},
		{"timeline retain too few", []string{"--timeline-retain", "2,1h", "--upstream", "h:1"}, nil, "",
			`config: timeline-retain "2,1h": 2 generations: want at least 4 (or 0 for no limit): late exchanges are checked against the last 4 (from --timeline-retain)`},
		{"report as a list", nil, nil, "upstream: h:1\nreport: [a, b]",
			`config: report "[a b]": want a single value, not a list or map (from FILE)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, tt.args, tt.env, tt.file)
			if err == nil {
				t.Fatalf("Load() = nil error; want %q", tt.want)
			}
			got := strings.Join(messages(err), "\n")
			got = replacePath(got)
			if got != tt.want {
				t.Errorf("Load() error =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// replacePath writes the temporary config file's path as FILE.
func replacePath(s string) string {
	i := strings.Index(s, "(from /")
	for i >= 0 {
		j := strings.Index(s[i:], "kproxy.yaml)")
		if j < 0 {
			break
		}
		s = s[:i] + "(from FILE)" + s[i+j+len("kproxy.yaml)"):]
		i = strings.Index(s, "(from /")
	}
	return s
}

func TestLoadFileErrors(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(broken, []byte("listen: [unclosed"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want string
	}{
		{"missing file", filepath.Join(dir, "nope.yaml"), "config: " + filepath.Join(dir, "nope.yaml") + ": stat"},
		{"broken yaml", broken, "config: read " + broken + ":"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			Flags(fs)
			if err := fs.Parse([]string{"--config", tt.path, "--upstream", "h:1"}); err != nil {
				t.Fatal(err)
			}
			_, err := Load(fs)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Load() error = %v; want prefix %q", err, tt.want)
			}
		})
	}
}

func TestEnvVar(t *testing.T) {
	tests := []struct{ key, want string }{
		{KeyListen, "KPROXY_LISTEN"},
		{KeyUpstream, "KPROXY_UPSTREAM"},
		{KeyMaxFrameSize, "KPROXY_MAX_FRAME_SIZE"},
		{KeyBrokerListeners, "KPROXY_BROKER_LISTENERS"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if got := EnvVar(tt.key); got != tt.want {
				t.Errorf("EnvVar(%q) = %q; want %q", tt.key, got, tt.want)
			}
		})
	}
}

func TestLoadReportsEveryProblem(t *testing.T) {
	_, err := load(t, []string{"--listen", "abc", "--log-level", "loud", "--max-frame-size", "1x"}, nil, "")
	want := []string{
		`config: max-frame-size "1x": not a size; want bytes or a number with KiB, MiB or GiB (from --max-frame-size)`,
		`config: listen "abc": missing port (from --listen)`,
		`config: upstream: required: at least one seed broker HOST:PORT`,
		`config: log-level "loud": want debug, info, warn or error (from --log-level)`,
	}
	if got := messages(err); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Load() error =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
