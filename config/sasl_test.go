package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadUpstreamSASL: where the upstream SASL settings come from, and
// the problems reported, each naming its key and never the password.
func TestLoadUpstreamSASL(t *testing.T) {
	const password = "pw-from-somewhere-4d2a"
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--upstream", "b:9092"}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		file string
		// wantErr is a substring of the error; "" means none.
		wantErr string
	}{
		{"password file", []string{"--upstream-sasl-mechanism", "SCRAM-SHA-256", "--upstream-sasl-username", "u",
			"--upstream-sasl-password-file", pwFile}, nil, "", ""},
		{"password from env", []string{"--upstream-sasl-mechanism", "PLAIN", "--upstream-sasl-username", "u"},
			map[string]string{"KPROXY_UPSTREAM_SASL_PASSWORD": password}, "", ""},
		{"everything from env", nil, map[string]string{"KPROXY_UPSTREAM_SASL_MECHANISM": "SCRAM-SHA-512",
			"KPROXY_UPSTREAM_SASL_USERNAME": "u", "KPROXY_UPSTREAM_SASL_PASSWORD_FILE": pwFile}, "", ""},
		{"from file", nil, nil, "upstream-sasl-mechanism: PLAIN\nupstream-sasl-username: u\nupstream-sasl-password-file: " + pwFile + "\n", ""},
		{"password key in file refused", nil, nil, "upstream-sasl-password: " + password + "\n",
			"upstream-sasl-password: unknown key"},
		{"no password", []string{"--upstream-sasl-mechanism", "PLAIN", "--upstream-sasl-username", "u"}, nil, "",
			"upstream-sasl-password-file: required with upstream-sasl-mechanism"},
		{"both password sources", []string{"--upstream-sasl-mechanism", "PLAIN", "--upstream-sasl-username", "u",
			"--upstream-sasl-password-file", pwFile}, map[string]string{"KPROXY_UPSTREAM_SASL_PASSWORD": password}, "",
			"set together with KPROXY_UPSTREAM_SASL_PASSWORD"},
		{"missing password file", []string{"--upstream-sasl-mechanism", "PLAIN", "--upstream-sasl-username", "u",
			"--upstream-sasl-password-file", filepath.Join(dir, "nope")}, nil, "",
			"cannot read the password file: no such file or directory"},
		{"empty password file", []string{"--upstream-sasl-mechanism", "PLAIN", "--upstream-sasl-username", "u",
			"--upstream-sasl-password-file", empty}, nil, "", "the password file is empty"},
		{"unknown mechanism", []string{"--upstream-sasl-mechanism", "GSSAPI", "--upstream-sasl-username", "u"},
			map[string]string{"KPROXY_UPSTREAM_SASL_PASSWORD": password}, "",
			`upstream-sasl-mechanism "GSSAPI": want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512`},
		{"no username", []string{"--upstream-sasl-mechanism", "PLAIN"},
			map[string]string{"KPROXY_UPSTREAM_SASL_PASSWORD": password}, "", "upstream-sasl-username: required"},
		{"username without mechanism", []string{"--upstream-sasl-username", "u"}, nil, "",
			"upstream-sasl-mechanism: required with upstream-sasl-username"},
		{"allow open", []string{"--allow-open-sasl-proxy"}, nil, "", ""},
		{"open listener refused", []string{"--upstream-sasl-mechanism", "PLAIN", "--upstream-sasl-username", "u",
			"--listen", "0.0.0.0:19092"}, map[string]string{"KPROXY_UPSTREAM_SASL_PASSWORD": password}, "",
			`upstream-sasl-mechanism "PLAIN": kproxy would authenticate as "u" for anyone who reaches 0.0.0.0:19092`},
		{"open listener allowed", []string{"--upstream-sasl-mechanism", "PLAIN", "--upstream-sasl-username", "u",
			"--listen", "0.0.0.0:19092", "--allow-open-sasl-proxy"},
			map[string]string{"KPROXY_UPSTREAM_SASL_PASSWORD": password}, "", ""},
		{"open broker listener refused", []string{"--upstream-sasl-mechanism", "PLAIN", "--upstream-sasl-username", "u"},
			map[string]string{"KPROXY_UPSTREAM_SASL_PASSWORD": password, "KPROXY_BROKER_LISTENERS": "1=10.0.0.5:19093"}, "",
			"for anyone who reaches 10.0.0.5:19093"},
		{"allow open not a bool", nil, map[string]string{"KPROXY_ALLOW_OPEN_SASL_PROXY": "maybe"}, "",
			`allow-open-sasl-proxy "maybe": want true or false`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := load(t, append(append([]string(nil), base...), tc.args...), tc.env, tc.file)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Load: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Load: %v; want an error with %q", err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), password) {
				t.Errorf("the error shows the password: %v", err)
			}
			if s := fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg); strings.Contains(s, password) {
				t.Errorf("the Config printed shows the password: %s", s)
			}
			if tc.wantErr == "" && cfg.UpstreamSASLMechanism != "" && string(cfg.UpstreamSASLPassword) != password {
				t.Errorf("UpstreamSASLPassword has %d bytes; want the %d of the password", len(cfg.UpstreamSASLPassword), len(password))
			}
		})
	}
}
