package config

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Flags registers the flags of `kproxy serve` on fs, with their defaults
// and the environment variable of each in its usage.
func Flags(fs *pflag.FlagSet) {
	for _, o := range Options() {
		if !o.Flag {
			continue
		}
		usage := o.Usage + " [env " + o.EnvVar() + "]"
		switch o.kind {
		case kindList:
			fs.StringSlice(o.Key, nil, usage)
		case kindInt:
			n, _ := strconv.Atoi(o.Default)
			fs.Int(o.Key, n, usage)
		case kindBool:
			fs.Bool(o.Key, o.Default == "true", usage)
		case kindDuration:
			d, _ := time.ParseDuration(o.Default)
			fs.Duration(o.Key, d, usage)
		default:
			fs.String(o.Key, o.Default, usage)
		}
	}
}

// Load builds the Config of `kproxy serve` and validates it. Each setting
// comes from, in order of precedence: its flag on fs when given on the
// command line, its KPROXY_* environment variable (set, even to ""), the
// file named by --config or KPROXY_CONFIG, its default. fs must hold the
// flags registered by Flags, already parsed; a nil fs means no flags.
// Every problem is reported, as *Error values joined with errors.Join.
func Load(fs *pflag.FlagSet) (Config, error) {
	v := viper.New()
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	// An empty variable is a value: KPROXY_ADMIN= turns the admin server off.
	v.AllowEmptyEnv(true)
	v.AutomaticEnv()
	for _, o := range Options() {
		if o.Default != "" {
			v.SetDefault(o.Key, o.Default)
		}
		if fs == nil || !o.Flag {
			continue
		}
		if f := fs.Lookup(o.Key); f != nil {
			if err := v.BindPFlag(o.Key, f); err != nil {
				return Config{}, fmt.Errorf("config: bind flag --%s: %w", o.Key, err)
			}
		}
	}
	path := v.GetString(KeyConfig)
	if path != "" {
		if err := readFile(v, path); err != nil {
			return Config{}, err
		}
	}
	cfg, p := fromViper(v)
	cfg.unknownEnv = unknownEnv(os.Environ())
	// Secrets' files are read here, once; Validate only checks that a
	// password came.
	readSecretFile(KeyUpstreamSASLPasswordFile, cfg.UpstreamSASLPasswordFile, &cfg.UpstreamSASLPassword, &p)
	readSecretFile(KeyAdminTokenFile, cfg.AdminTokenFile, &cfg.AdminToken, &p)
	// Validate the settings that parsed; the others already have a problem.
	failed := map[string]bool{}
	for _, e := range p {
		failed[topKey(e.Key)] = true
	}
	for _, e := range cfg.problems() {
		if !failed[topKey(e.Key)] {
			p = append(p, e)
		}
	}
	for _, e := range p {
		e.Source = source(v, fs, path, e.Key)
	}
	return cfg, p.err()
}

// readFile reads the config file at path into v and refuses keys it does
// not know, which are most often typos that would otherwise be ignored.
func readFile(v *viper.Viper, path string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("config: %s: %w", path, err)
	}
	file := viper.New()
	file.SetConfigFile(path)
	if err := file.ReadInConfig(); err != nil {
		return fmt.Errorf("config: read %s: %w", path, err)
	}
	known := map[string]bool{}
	for _, o := range Options() {
		known[o.Key] = o.Key != KeyConfig && !o.EnvOnly
	}
	var p problems
	keys := file.AllKeys()
	sort.Strings(keys)
	for _, k := range keys {
		if !known[topKey(k)] {
			p = append(p, &Error{Key: k, Reason: "unknown key", Source: path})
		}
	}
	if err := p.err(); err != nil {
		return err
	}
	if err := v.MergeConfigMap(file.AllSettings()); err != nil {
		return fmt.Errorf("config: read %s: %w", path, err)
	}
	return nil
}

// fromViper reads every setting out of v.
func fromViper(v *viper.Viper) (Config, problems) {
	var (
		c Config
		p problems
	)
	read(v, &p, KeyListen, parseString, &c.Listen)
	read(v, &p, KeyUpstream, parseList, &c.Upstreams)
	read(v, &p, KeyAdvertise, parseString, &c.Advertise)
	read(v, &p, KeyBrokerPortBase, parseInt, &c.BrokerPortBase)
	read(v, &p, KeyBrokerListeners, parseNodeMap, &c.BrokerListeners)
	read(v, &p, KeyTLSCert, parseString, &c.TLSCert)
	read(v, &p, KeyTLSKey, parseString, &c.TLSKey)
	read(v, &p, KeyTLSClientCA, parseString, &c.TLSClientCA)
	read(v, &p, KeyTLSReloadInterval, parseDuration, &c.TLSReloadInterval)
	read(v, &p, KeySNIHostPattern, parseString, &c.SNIHostPattern)
	read(v, &p, KeyUpstreamTLS, parseBool, &c.UpstreamTLS)
	read(v, &p, KeyUpstreamCA, parseString, &c.UpstreamCA)
	read(v, &p, KeyUpstreamCert, parseString, &c.UpstreamCert)
	read(v, &p, KeyUpstreamKey, parseString, &c.UpstreamKey)
	read(v, &p, KeyUpstreamServerName, parseString, &c.UpstreamServerName)
	read(v, &p, KeyUpstreamInsecureSkipVerify, parseBool, &c.UpstreamInsecureSkipVerify)
	read(v, &p, KeyMaxFrameSize, parseSize, &c.MaxFrameSize)
	read(v, &p, KeyMaxGroupFrameSize, parseSize, &c.MaxGroupFrameSize)
	read(v, &p, KeyDialTimeout, parseDuration, &c.DialTimeout)
	read(v, &p, KeyShutdownTimeout, parseDuration, &c.ShutdownTimeout)
	read(v, &p, KeyObserverQueue, parseInt, &c.ObserverQueue)
	read(v, &p, KeyObserverQueueBytes, parseSize64, &c.ObserverQueueBytes)
	read(v, &p, KeyMaxObservedFrame, parseSize, &c.MaxObservedFrameSize)
	read(v, &p, KeyMaxBufferedBytes, parseSize64, &c.MaxBufferedBytes)
	read(v, &p, KeyFrameReadTimeout, parseDuration, &c.FrameReadTimeout)
	read(v, &p, KeyMaxConnections, parseInt, &c.MaxConnections)
	read(v, &p, KeyMaxConnsPerIP, parseInt, &c.MaxConnectionsPerIP)
	read(v, &p, KeyIdleTimeout, parseDuration, &c.IdleTimeout)
	read(v, &p, KeyJournal, parseString, &c.Journal)
	read(v, &p, KeyJournalFsync, parseFsync, &c.JournalFsync)
	read(v, &p, KeyJournalSegmentSize, parseSize64, &c.JournalSegmentSize)
	read(v, &p, KeyJournalSegmentAge, parseDuration, &c.JournalSegmentAge)
	read(v, &p, KeyJournalRetainSize, parseSize64, &c.JournalRetainSize)
	read(v, &p, KeyJournalRetainAge, parseDuration, &c.JournalRetainAge)
	read(v, &p, KeyReport, parseString, &c.Report)
	read(v, &p, KeyStormRebalances, parseInt, &c.StormRebalances)
	read(v, &p, KeyStormWindow, parseDuration, &c.StormWindow)
	read(v, &p, KeyTimelineRetain, parseRetention, &c.TimelineRetain)
	read(v, &p, KeyAdmin, parseString, &c.Admin)
	read(v, &p, KeyAdminHosts, parseList, &c.AdminHosts)
	read(v, &p, KeyAdminTokenFile, parseString, &c.AdminTokenFile)
	read(v, &p, KeyMetricsMaxGroups, parseInt, &c.MetricsMaxGroups)
	read(v, &p, KeyLogFormat, parseString, &c.LogFormat)
	read(v, &p, KeyLogLevel, parseString, &c.LogLevel)
	read(v, &p, KeyUpstreamSASLMechanism, parseString, &c.UpstreamSASLMechanism)
	read(v, &p, KeyUpstreamSASLUsername, parseString, &c.UpstreamSASLUsername)
	read(v, &p, KeyUpstreamSASLPasswordFile, parseString, &c.UpstreamSASLPasswordFile)
	read(v, &p, KeyAllowOpenSASLProxy, parseBool, &c.AllowOpenSASLProxy)
	readSecretEnv(KeyUpstreamSASLPassword, KeyUpstreamSASLPasswordFile, c.UpstreamSASLPasswordFile, &c.UpstreamSASLPassword, &p)
	readSecretEnv(KeyAdminToken, KeyAdminTokenFile, c.AdminTokenFile, &c.AdminToken, &p)
	readFleet(v, &p, &c.Fleet)
	return c, p
}

// read parses key's value in v into *dst, naming key once for both the
// lookup and the error, and adds a failure to p.
func read[T any](v *viper.Viper, p *problems, key string, parse func(string, any) (T, *Error), dst *T) {
	x, err := parse(key, v.Get(key))
	if err != nil {
		*p = append(*p, err)
	}
	*dst = x
}

// source names where key's value came from, in Load's order of precedence;
// "" for a default. key may be a sub-key such as "broker-listeners.1".
func source(v *viper.Viper, fs *pflag.FlagSet, path, key string) string {
	top := topKey(key)
	if fs != nil {
		if f := fs.Lookup(top); f != nil && f.Changed {
			return "--" + top
		}
	}
	if _, ok := os.LookupEnv(EnvVar(top)); ok {
		return EnvVar(top)
	}
	if path != "" && v.InConfig(top) {
		return path
	}
	return ""
}

// topKey is the setting a key belongs to: "broker-listeners" for
// "broker-listeners.1".
func topKey(key string) string {
	top, _, _ := strings.Cut(key, ".")
	return top
}
