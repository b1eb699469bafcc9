package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Secret is a credential read from a file or the environment. It prints
// (fmt, logs) as "[redacted]", so that a Config printed whole shows none.
type Secret string

// String is "[redacted]", or "" for an empty secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString is String, for %#v.
func (s Secret) GoString() string { return s.String() }

var _ fmt.GoStringer = Secret("")

// readUpstreamSASLPassword takes the upstream SASL password from
// KPROXY_UPSTREAM_SASL_PASSWORD, the only place besides the password file
// it may come from. Both at once is a problem: which one wins would be a
// guess.
func readUpstreamSASLPassword(c *Config, p *problems) {
	env, ok := os.LookupEnv(EnvVar(KeyUpstreamSASLPassword))
	if !ok || env == "" {
		return
	}
	c.UpstreamSASLPassword = Secret(env)
	if c.UpstreamSASLPasswordFile != "" {
		p.add(KeyUpstreamSASLPasswordFile, c.UpstreamSASLPasswordFile,
			"set together with "+EnvVar(KeyUpstreamSASLPassword)+"; keep one")
	}
}

// readPasswordFile reads a password file: its content without the
// trailing newline editors add. The error never holds the content.
func readPasswordFile(path string) (Secret, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("cannot read the password file: %v", err)
	}
	pw := strings.TrimRight(string(b), "\r\n")
	if pw == "" {
		return "", errors.New("the password file is empty")
	}
	return Secret(pw), nil
}
