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
		known[o.Key] = o.Key != KeyConfig
	}
	var p problems
	keys := file.AllKeys()
	sort.Strings(keys)
	for _, k := range keys {
		top, _, _ := strings.Cut(k, ".")
		if !known[top] {
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
		c   Config
		p   problems
		err *Error
	)
	keep := func(e *Error) {
		if e != nil {
			p = append(p, e)
		}
	}
	c.Listen, err = parseString(KeyListen, v.Get(KeyListen))
	keep(err)
	c.Upstreams, err = parseList(KeyUpstream, v.Get(KeyUpstream))
	keep(err)
	c.Advertise, err = parseString(KeyAdvertise, v.Get(KeyAdvertise))
	keep(err)
	c.BrokerPortBase, err = parseInt(KeyBrokerPortBase, v.Get(KeyBrokerPortBase))
	keep(err)
	c.BrokerListeners, err = parseNodeMap(KeyBrokerListeners, v.Get(KeyBrokerListeners))
	keep(err)
	c.MaxFrameSize, err = parseSize(KeyMaxFrameSize, v.Get(KeyMaxFrameSize))
	keep(err)
	c.DialTimeout, err = parseDuration(KeyDialTimeout, v.Get(KeyDialTimeout))
	keep(err)
	c.ShutdownTimeout, err = parseDuration(KeyShutdownTimeout, v.Get(KeyShutdownTimeout))
	keep(err)
	c.ObserverQueue, err = parseInt(KeyObserverQueue, v.Get(KeyObserverQueue))
	keep(err)
	c.ObserverQueueBytes, err = parseSize64(KeyObserverQueueBytes, v.Get(KeyObserverQueueBytes))
	keep(err)
	c.Journal, err = parseString(KeyJournal, v.Get(KeyJournal))
	keep(err)
	c.JournalFsync, err = parseFsync(KeyJournalFsync, v.Get(KeyJournalFsync))
	keep(err)
	c.JournalSegmentSize, err = parseSize64(KeyJournalSegmentSize, v.Get(KeyJournalSegmentSize))
	keep(err)
	c.JournalSegmentAge, err = parseDuration(KeyJournalSegmentAge, v.Get(KeyJournalSegmentAge))
	keep(err)
	c.JournalRetainSize, err = parseSize64(KeyJournalRetainSize, v.Get(KeyJournalRetainSize))
	keep(err)
	c.JournalRetainAge, err = parseDuration(KeyJournalRetainAge, v.Get(KeyJournalRetainAge))
	keep(err)
	c.Report, err = parseString(KeyReport, v.Get(KeyReport))
	keep(err)
	c.StormRebalances, err = parseInt(KeyStormRebalances, v.Get(KeyStormRebalances))
	keep(err)
	c.StormWindow, err = parseDuration(KeyStormWindow, v.Get(KeyStormWindow))
	keep(err)
	c.Admin, err = parseString(KeyAdmin, v.Get(KeyAdmin))
	keep(err)
	c.LogFormat, err = parseString(KeyLogFormat, v.Get(KeyLogFormat))
	keep(err)
	c.LogLevel, err = parseString(KeyLogLevel, v.Get(KeyLogLevel))
	keep(err)
	return c, p
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
