package config

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/timeline"
)

// The parse functions turn one raw value, as viper returns it from a flag,
// an environment variable, a file or a default, into its Go type; decodeHook
// picks one by the type of the field the value is decoded into. Flags and
// environment variables give strings; YAML gives ints, floats, lists and
// maps. Each failure is an *Error whose Key is "" or, for an entry of a
// map, ".ENTRY": decode puts the setting's key in front.

func parseString(raw any) (string, *Error) {
	switch x := raw.(type) {
	case nil:
		return "", nil
	case string:
		return strings.TrimSpace(x), nil
	case int, int64, float64, bool:
		return fmt.Sprint(x), nil
	}
	return "", &Error{Value: fmt.Sprint(raw), Reason: "want a single value, not a list or map"}
}

// parseList accepts a comma-separated string or a list; blank entries (a
// trailing comma) are dropped.
func parseList(raw any) ([]string, *Error) {
	var items []string
	switch x := raw.(type) {
	case nil:
	case string:
		items = strings.Split(x, ",")
	case []string:
		items = x
	case []any:
		for _, it := range x {
			s, err := parseString(it)
			if err != nil {
				return nil, err
			}
			items = append(items, s)
		}
	default:
		return nil, &Error{Value: fmt.Sprint(raw), Reason: "want a list or a comma-separated string"}
	}
	var out []string
	for _, it := range items {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out, nil
}

func parseInt(raw any) (int, *Error) {
	switch x := raw.(type) {
	case int:
		return x, nil
	case int64:
		return int(x), nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) <= math.MaxInt32 {
			return int(x), nil
		}
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if err == nil {
			return n, nil
		}
	}
	return 0, &Error{Value: fmt.Sprint(raw), Reason: "not an integer"}
}

// sizeUnits are the suffixes parseSize accepts, longest first so that "MiB"
// is not read as "B".
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1},
}

// parseSize reads a byte count that must fit an int32: an integer, or a
// number followed by B, KiB, MiB or GiB ("100MiB", "1.5 MiB").
func parseSize(raw any) (int32, *Error) {
	n, err := parseBytes(raw, math.MaxInt32, "out of range (0 to 2GiB-1)")
	return int32(n), err
}

// maxBytes bounds the int64 sizes (journal sizes): far beyond any disk, and
// exactly representable as a float64.
const maxBytes = 1 << 50

// parseSize64 reads a byte count of up to 1024 TiB, written like parseSize's.
func parseSize64(raw any) (int64, *Error) {
	return parseBytes(raw, maxBytes, "out of range (0 to 1048576GiB)")
}

// parseBytes reads a byte count from 0 to most; tooBig is the reason given
// above it.
func parseBytes(raw any, most int64, tooBig string) (int64, *Error) {
	bad := func(reason string) (int64, *Error) {
		return 0, &Error{Value: fmt.Sprint(raw), Reason: reason}
	}
	var n float64
	switch x := raw.(type) {
	case int:
		n = float64(x)
	case int64:
		n = float64(x)
	case float64:
		n = x
	case string:
		s := strings.TrimSpace(x)
		mult := int64(1)
		for _, u := range sizeUnits {
			if strings.HasSuffix(s, u.suffix) {
				s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
				break
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return bad("not a size; want bytes or a number with KiB, MiB or GiB")
		}
		n = f * float64(mult)
	default:
		return bad("not a size; want bytes or a number with KiB, MiB or GiB")
	}
	if n != math.Trunc(n) {
		return bad("not a whole number of bytes")
	}
	if n < 0 || n > float64(most) {
		return bad(tooBig)
	}
	return int64(n), nil
}

// parseFsync reads a journal durability policy as journal.ParseFsync does:
// "always", "never", or a Go duration of at least 1ms.
func parseFsync(raw any) (journal.Fsync, *Error) {
	const want = "want always, never or an interval such as 1s"
	var s string
	switch x := raw.(type) {
	case journal.Fsync:
		return x, nil
	case time.Duration:
		s = x.String()
	case string:
		s = strings.TrimSpace(x)
	case int, int64, float64:
		return 0, &Error{Value: fmt.Sprint(x), Reason: "missing unit; " + want}
	default:
		return 0, &Error{Value: fmt.Sprint(raw), Reason: want}
	}
	f, err := journal.ParseFsync(s)
	if err == nil {
		return f, nil
	}
	switch d, derr := time.ParseDuration(s); {
	case s == "":
		return 0, &Error{Reason: "empty; " + want}
	case derr == nil && d < time.Millisecond:
		return 0, &Error{Value: s, Reason: "interval below 1ms; " + want}
	}
	if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
		return 0, &Error{Value: s, Reason: "missing unit; " + want}
	}
	return 0, &Error{Value: s, Reason: want}
}

// parseDuration reads a Go duration. A bare number other than 0 is refused
// rather than read as nanoseconds, the classic surprise of `dial-timeout: 5`.
func parseDuration(raw any) (time.Duration, *Error) {
	switch x := raw.(type) {
	case time.Duration:
		return x, nil
	case string:
		s := strings.TrimSpace(x)
		d, err := time.ParseDuration(s)
		if err == nil {
			return d, nil
		}
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return 0, &Error{Value: s, Reason: "missing unit; want a duration like 10s or 1m30s"}
		}
	case int, int64, float64:
		if fmt.Sprint(x) == "0" { // 0 needs no unit, as in time.ParseDuration
			return 0, nil
		}
		return 0, &Error{Value: fmt.Sprint(x), Reason: "missing unit; want a duration like 10s or 1m30s"}
	}
	return 0, &Error{Value: fmt.Sprint(raw), Reason: "not a duration; want one like 10s or 1m30s"}
}

// parseNodeMap reads node id -> HOST:PORT from a file map or from a string
// "ID=HOST:PORT,ID=HOST:PORT" (the environment's form).
func parseNodeMap(raw any) (map[int32]string, *Error) {
	entries := map[string]any{}
	switch x := raw.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		entries = x
	case string:
		for _, kv := range strings.Split(x, ",") {
			if kv = strings.TrimSpace(kv); kv == "" {
				continue
			}
			id, addr, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, &Error{Value: kv, Reason: "want NODE_ID=HOST:PORT"}
			}
			entries[strings.TrimSpace(id)] = strings.TrimSpace(addr)
		}
	default:
		return nil, &Error{Value: fmt.Sprint(raw), Reason: "want a map of node id to HOST:PORT"}
	}
	if len(entries) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(entries))
	for id := range entries {
		ids = append(ids, id)
	}
	sort.Strings(ids) // the same first error every time
	out := make(map[int32]string, len(entries))
	for _, id := range ids {
		v := entries[id]
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil {
			return nil, &Error{Key: "." + id, Reason: "node id is not a 32-bit integer"}
		}
		addr, perr := parseString(v)
		if perr != nil {
			perr.Key = "." + id
			return nil, perr
		}
		out[int32(n)] = addr
	}
	return out, nil
}

// parseBool reads true or false (also 1/0, t/f, as strconv.ParseBool).
func parseBool(raw any) (bool, *Error) {
	switch x := raw.(type) {
	case nil:
		return false, nil
	case bool:
		return x, nil
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(x))
		if err == nil {
			return b, nil
		}
	}
	return false, &Error{Value: fmt.Sprint(raw), Reason: "want true or false"}
}

// parseRetention reads GENERATIONS,AGE (see timeline.ParseRetention).
func parseRetention(raw any) (timeline.Retention, *Error) {
	switch x := raw.(type) {
	case timeline.Retention:
		return x, nil
	case string:
		s := strings.TrimSpace(x)
		r, err := timeline.ParseRetention(s)
		if err != nil {
			return timeline.Retention{}, &Error{Value: s, Reason: "want GENERATIONS,AGE such as 10,24h (0 for no limit)"}
		}
		return r, nil
	}
	return timeline.Retention{}, &Error{Value: fmt.Sprint(raw), Reason: "want GENERATIONS,AGE such as 10,24h (0 for no limit)"}
}
