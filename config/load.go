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
		// The flag's type is its field's: the typed flags take what the
		// field's parse function takes, the others are strings.
		switch fieldTypes()[o.Key] {
		case listType:
			fs.StringSlice(o.Key, nil, usage)
		case intType:
			n, _ := strconv.Atoi(o.Default)
			fs.Int(o.Key, n, usage)
		case boolType:
			fs.Bool(o.Key, o.Default == "true", usage)
		case durationType:
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
		if o.EnvOnly {
			continue // a secret: readSecretEnv reads it, never Unmarshal
		}
		// Bound, the variable is one of v's keys, which Unmarshal decodes.
		if err := v.BindEnv(o.Key); err != nil {
			return Config{}, fmt.Errorf("config: bind %s: %w", o.EnvVar(), err)
		}
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
	cfg, p := decode(v)
	readSecretEnv(KeyUpstreamSASLPassword, KeyUpstreamSASLPasswordFile, cfg.UpstreamSASLPasswordFile, &cfg.UpstreamSASLPassword, &p)
	readSecretEnv(KeyAdminToken, KeyAdminTokenFile, cfg.AdminTokenFile, &cfg.AdminToken, &p)
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
