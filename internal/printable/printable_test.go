package printable

import "testing"

func TestString(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain", "consumer-A-434c3ee6", "consumer-A-434c3ee6"},
		{"unicode kept", "grüppe-日本", "grüppe-日本"},
		{"newline forging a log line", "g\n10:29:00.000\tERROR\tFORGED", `g\n10:29:00.000\tERROR\tFORGED`},
		{"terminal title escape", "c\x1b]0;pwned\x07", `c\x1b]0;pwned\a`},
		{"carriage return", "a\rb", `a\rb`},
		{"C1 and DEL", "a\u0085b\x7f", `a\u0085b\x7f`},
		{"line separator", "a\u2028b", `a\u2028b`},
		{"invalid utf-8", "a\xffb", `a\xffb`},
		{"backslash doubled: an escape cannot be forged", `a\nb`, `a\\nb`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := String(tc.in); got != tc.want {
				t.Errorf("String(%q) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}
