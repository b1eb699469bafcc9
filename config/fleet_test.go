package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestValidateFleet: each bad fleet setting, or combination, is refused
// with a message naming its key.
func TestValidateFleet(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *Config)
		want   []string // every message, in order; nil means valid
	}{
		{"publish", func(c *Config) { c.EventsTopic = "kproxy-events"; c.InstanceID = "zone-a" }, nil},
		{"publish elsewhere and show the fleet", func(c *Config) {
			c.EventsTopic, c.FleetTopic = "kproxy-events", "kproxy-events"
			c.EventsBrokers = []string{"events-1:9092", "[fd00::2]:9092"}
		}, nil},
		{"bad topic name", func(c *Config) { c.EventsTopic = "kproxy events" },
			[]string{`config: events-topic "kproxy events": ' ' is not allowed in a topic name (a-z, A-Z, 0-9, '.', '_', '-')`}},
		{"dot topic", func(c *Config) { c.FleetTopic = ".." },
			[]string{`config: fleet-topic "..": "." and ".." are not topic names`}},
		{"topic too long", func(c *Config) { c.FleetTopic = strings.Repeat("t", 250) },
			[]string{`config: fleet-topic "` + strings.Repeat("t", 250) + `": longer than 249 characters`}},
		{"events brokers without a topic", func(c *Config) { c.EventsBrokers = []string{"events-1:9092"} },
			[]string{`config: events-brokers "[events-1:9092]": only with events-topic or fleet-topic`}},
		{"events broker without port", func(c *Config) { c.EventsTopic = "e"; c.EventsBrokers = []string{"events-1"} },
			[]string{`config: events-brokers "events-1": missing port`}},
		{"instance id without events topic", func(c *Config) { c.InstanceID = "zone-a"; c.FleetTopic = "e" },
			[]string{`config: instance-id "zone-a": only with events-topic (it names this instance's records)`}},
		{"no partitions", func(c *Config) { c.EventsPartitions = 0 },
			[]string{`config: events-partitions "0": out of range (1-10000)`}},
		{"negative retention", func(c *Config) { c.EventsRetention = -time.Hour },
			[]string{`config: events-retention "-1h0m0s": must not be negative (0 means the cluster's default)`}},
		{"max skew zero", func(c *Config) { c.MaxSkew = 0 },
			[]string{`config: max-skew "0s": out of range (more than 0, at most 1m0s)`}},
		{"max skew too large", func(c *Config) { c.MaxSkew = 2 * time.Minute },
			[]string{`config: max-skew "2m0s": out of range (more than 0, at most 1m0s)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.change(&c)
			err := c.Validate()
			var got []string
			for _, e := range unjoin(err) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Validate:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// unjoin splits an errors.Join into its errors.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// TestLoadFleetFlags: the fleet flags reach the Config, and a bad one is
// reported with the flag it came from.
func TestLoadFleetFlags(t *testing.T) {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	Flags(fs)
	err := fs.Parse([]string{"--upstream", "127.0.0.1:9092", "--events-topic", "ev", "--events-brokers", "e1:9092,e2:9092",
		"--instance-id", "zone-a", "--fleet-topic", "ev", "--max-skew", "3s", "--events-partitions", "6", "--events-retention", "48h"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(fs)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := Fleet{EventsTopic: "ev", EventsBrokers: []string{"e1:9092", "e2:9092"}, EventsPartitions: 6,
		EventsRetention: 48 * time.Hour, InstanceID: "zone-a", FleetTopic: "ev", MaxSkew: 3 * time.Second}
	if got := c.Fleet; strings.Join(got.EventsBrokers, ",") != strings.Join(want.EventsBrokers, ",") ||
		got.EventsTopic != want.EventsTopic || got.EventsPartitions != want.EventsPartitions ||
		got.EventsRetention != want.EventsRetention || got.InstanceID != want.InstanceID ||
		got.FleetTopic != want.FleetTopic || got.MaxSkew != want.MaxSkew {
		t.Errorf("Fleet = %+v; want %+v", got, want)
	}

	fs = pflag.NewFlagSet("serve", pflag.ContinueOnError)
	Flags(fs)
	if err := fs.Parse([]string{"--upstream", "127.0.0.1:9092", "--instance-id", "zone-a"}); err != nil {
		t.Fatal(err)
	}
	_, err = Load(fs)
	var ce *Error
	if !errors.As(err, &ce) || ce.Key != KeyInstanceID || ce.Source != "--instance-id" {
		t.Errorf("Load with --instance-id alone: %v; want an error on instance-id from --instance-id", err)
	}
}
