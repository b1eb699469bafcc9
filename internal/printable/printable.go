// Package printable escapes the strings clients choose (group, member,
// client and instance ids, topic names, error messages) where they are
// written for people: console log lines and text renderings. A client id
// holding a newline would otherwise start a forged log line, and one
// holding terminal escape sequences would reach the operator's terminal.
// JSON output escapes by itself and needs none of this.
package printable

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// String returns s with every control character (C0, DEL, C1, and the
// Unicode line and paragraph separators) and every invalid UTF-8 byte
// written as a Go escape (\n, \x1b, \u2028), and backslashes doubled so
// that an escape cannot be forged either. s is returned as is, without
// copying, when it holds none.
func String(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case r == '\\':
			b.WriteString(`\\`)
		case escaped(r):
			q := strconv.QuoteRune(r) // 'x' with r escaped
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Quote is String in double quotes, for a value shown on its own.
func Quote(s string) string { return `"` + String(s) + `"` }

func escaped(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
}

func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '\\' || c >= 0x80 {
			return cleanSlow(s[i:])
		}
	}
	return true
}

func cleanSlow(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || r == '\\' || escaped(r) {
			return false
		}
	}
	return true
}
