package config

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeReference checks that the README's configuration reference is
// exactly one row per option, in the order and with the text of Options.
func TestReadmeReference(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const header = "| Flag | Environment | File key | Default | Meaning |\n|---|---|---|---|---|\n"
	readme := string(b)
	i := strings.Index(readme, header)
	if i < 0 {
		t.Fatalf("README.md lacks the configuration table header\n%s", header)
	}
	table := readme[i+len(header):]
	if end := strings.Index(table, "\n\n"); end >= 0 {
		table = table[:end+1]
	}
	want := referenceTable()
	if table != want {
		t.Errorf("README.md configuration table differs from Options(); want the rows\n%s", want)
	}
}

// referenceTable is the README's configuration table without its header.
func referenceTable() string {
	code := func(s string) string {
		if s == "" {
			return "—"
		}
		return "`" + s + "`"
	}
	var b strings.Builder
	for _, o := range Options() {
		flag, key := "—", code(o.Key)
		if o.Flag {
			flag = code("--" + o.Key)
		}
		if o.Key == KeyConfig || o.EnvOnly {
			key = "—"
		}
		b.WriteString("| " + strings.Join([]string{flag, code(o.EnvVar()), key, code(o.Default), o.Usage}, " | ") + " |\n")
	}
	return b.String()
}
