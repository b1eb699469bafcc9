package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

func TestLogger(t *testing.T) {
	tests := []struct {
		name, format, level string
		check               func(t *testing.T, out string)
	}{
		{"json for machines", "json", "info", func(t *testing.T, out string) {
			var m map[string]any
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatalf("not one JSON object: %v: %q", err, out)
			}
			if m["level"] != "info" || m["msg"] != "hello" || m["group"] != "g1" {
				t.Errorf("fields = %v", m)
			}
			if _, err := time.Parse(time.RFC3339Nano, m["time"].(string)); err != nil {
				t.Errorf("time %v: %v", m["time"], err)
			}
		}},
		{"console for people", "console", "info", func(t *testing.T, out string) {
			if !strings.Contains(out, "\tINFO\thello\t") || !strings.Contains(out, `{"group": "g1"}`) {
				t.Errorf("console line = %q", out)
			}
		}},
		{"level filters", "console", "warn", func(t *testing.T, out string) {
			if out != "" {
				t.Errorf("info line written at level warn: %q", out)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			log, err := newLogger(&b, tt.format, tt.level)
			if err != nil {
				t.Fatal(err)
			}
			log.Info("hello", zap.String("group", "g1"))
			tt.check(t, b.String())
		})
	}
}

func TestLoggerErrors(t *testing.T) {
	tests := []struct{ name, format, level, want string }{
		{"format", "text", "info", `log format "text": want console or json`},
		{"level", "json", "loud", `log level "loud": unrecognized level: "loud"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newLogger(&bytes.Buffer{}, tt.format, tt.level)
			if err == nil || err.Error() != tt.want {
				t.Errorf("newLogger() error = %v; want %q", err, tt.want)
			}
		})
	}
}
