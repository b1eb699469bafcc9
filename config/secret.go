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

// readSecretEnv takes a secret (the upstream SASL password, the admin
// token) from its environment variable, the only place besides its file
// (fileKey, file) it may come from. Both at once is a problem: which one
// wins would be a guess.
func readSecretEnv(key, fileKey, file string, dst *Secret, p *problems) {
	env, ok := os.LookupEnv(EnvVar(key))
	if !ok || env == "" {
		return
	}
	*dst = Secret(env)
	if file != "" {
		p.add(fileKey, file, "set together with "+EnvVar(key)+"; keep one")
	}
}

// readSecretFile reads *dst from file, unless it came from the
// environment or no file is named.
func readSecretFile(fileKey, file string, dst *Secret, p *problems) {
	if *dst != "" || file == "" {
		return
	}
	s, err := readPasswordFile(file)
	if err != nil {
		p.add(fileKey, file, err.Error())
	}
	*dst = s
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
