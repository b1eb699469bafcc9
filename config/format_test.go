package config

import (
	"testing"
	"time"
)

func TestFormatSize(t *testing.T) {
	tests := []struct {
		name string
		n    int64
		want string
	}{
		{"zero", 0, "0"},
		{"bytes", 1000, "1000"},
		{"KiB", 3 << 10, "3KiB"},
		{"MiB", 100 << 20, "100MiB"},
		{"GiB", 1 << 30, "1GiB"},
		{"not whole GiB", 1536 << 20, "1536MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := formatSize(tt.n)
			if got != tt.want {
				t.Errorf("formatSize(%d) = %q; want %q", tt.n, got, tt.want)
			}
			back, err := parseSize64(got)
			if err != nil || back != tt.n {
				t.Errorf("parseSize64(%q) = %d, %v; want %d", got, back, err, tt.n)
			}
		})
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		want string
	}{
		{"zero", 0, "0"},
		{"seconds", 10 * time.Second, "10s"},
		{"minutes", 10 * time.Minute, "10m"},
		{"hours", 168 * time.Hour, "168h"},
		{"mixed", 90 * time.Second, "1m30s"},
		{"sub-second", 1500 * time.Millisecond, "1.5s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := formatDuration(tt.d)
			if got != tt.want {
				t.Errorf("formatDuration(%v) = %q; want %q", tt.d, got, tt.want)
			}
			back, err := parseDuration(got)
			if err != nil || back != tt.d {
				t.Errorf("parseDuration(%q) = %v, %v; want %v", got, back, err, tt.d)
			}
		})
	}
}
