package config

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeReference checks that the README's configuration reference has
// one row per option, as Options describes it.
func TestReadmeReference(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	code := func(s string) string {
		if s == "" {
			return "—"
		}
		return "`" + s + "`"
	}
	for _, o := range Options() {
		t.Run(o.Key, func(t *testing.T) {
			flag, key := "—", code(o.Key)
			if o.Flag {
				flag = code("--" + o.Key)
			}
			if o.Key == KeyConfig {
				key = "—"
			}
			row := "| " + strings.Join([]string{flag, code(o.EnvVar()), key, code(o.Default), o.Usage}, " | ") + " |\n"
			if !strings.Contains(readme, row) {
				t.Errorf("README.md lacks the row\n%s", row)
			}
		})
	}
}
