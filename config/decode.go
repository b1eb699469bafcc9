package config

import (
	"reflect"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/timeline"
)

// decode unmarshals every setting in v into a Config through the
// mapstructure tags of Config's fields (each tag is a setting's key), with
// decodeHook turning raw values into the fields' types. A setting that
// does not parse is left zero and reported as an *Error naming its key.
func decode(v *viper.Viper) (Config, problems) {
	var c Config
	err := v.Unmarshal(&c, func(dc *mapstructure.DecoderConfig) {
		dc.DecodeHook = decodeHook
		dc.WeaklyTypedInput = false
	})
	return c, decodeProblems(err)
}

// Types whose values decodeHook parses by type rather than by kind.
var (
	durationType  = reflect.TypeFor[time.Duration]()
	fsyncType     = reflect.TypeFor[journal.Fsync]()
	retentionType = reflect.TypeFor[timeline.Retention]()
	nodeMapType   = reflect.TypeFor[map[int32]string]()
	listType      = reflect.TypeFor[[]string]()
	intType       = reflect.TypeFor[int]()
	boolType      = reflect.TypeFor[bool]()
)

// fieldTypes maps each key to the type of the Config field whose
// mapstructure tag it is, walking squashed structs (Fleet). Options and
// these tags name the same keys (TestOptionsAreFields).
func fieldTypes() map[string]reflect.Type {
	types := map[string]reflect.Type{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			tag := f.Tag.Get("mapstructure")
			switch {
			case tag == ",squash":
				walk(f.Type)
			case tag != "" && tag != "-":
				types[tag] = f.Type
			}
		}
	}
	walk(reflect.TypeFor[Config]())
	return types
}

// decodeHook parses a raw value into the type of the field it is decoded
// into: an int32 or int64 is a size in bytes (max-frame-size: 1MiB), a
// time.Duration needs its unit, a []string may be a comma-separated string,
// a node map may be "ID=HOST:PORT,...". A value already of its field's type
// (a map key decoded by parseNodeMap) passes as it is, but for strings and
// lists, which are trimmed.
func decodeHook(from, to reflect.Value) (any, error) {
	raw := from.Interface()
	if from.Type() == to.Type() && to.Kind() != reflect.String && to.Kind() != reflect.Slice {
		return raw, nil
	}
	var (
		x   any
		err *Error
	)
	switch to.Type() {
	case durationType:
		x, err = parseDuration(raw)
	case fsyncType:
		x, err = parseFsync(raw)
	case retentionType:
		x, err = parseRetention(raw)
	case nodeMapType:
		x, err = parseNodeMap(raw)
	case listType:
		x, err = parseList(raw)
	default:
		switch to.Kind() {
		case reflect.String:
			x, err = parseString(raw)
		case reflect.Bool:
			x, err = parseBool(raw)
		case reflect.Int:
			x, err = parseInt(raw)
		case reflect.Int32:
			x, err = parseSize(raw)
		case reflect.Int64:
			x, err = parseSize64(raw)
		default: // Config itself
			return raw, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return x, nil
}

// decodeProblems turns the error of decode's Unmarshal, a tree of
// errors.Join and *mapstructure.DecodeError, into one *Error per setting
// that failed, keyed by its field's tag, in the order of Config's fields.
func decodeProblems(err error) problems {
	var p problems
	var walk func(err error, key string)
	walk = func(err error, key string) {
		switch x := err.(type) {
		case nil:
		case *mapstructure.DecodeError:
			walk(x.Unwrap(), x.Name())
		case *Error:
			x.Key = key + x.Key
			p = append(p, x)
		case interface{ Unwrap() []error }:
			for _, err := range x.Unwrap() {
				walk(err, key)
			}
		case interface{ Unwrap() error }: // Decode's "decoding failed" line
			walk(x.Unwrap(), key)
		default:
			p = append(p, &Error{Key: key, Reason: err.Error()})
		}
	}
	walk(err, "")
	return p
}
